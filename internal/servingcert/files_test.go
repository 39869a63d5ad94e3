package servingcert

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

func TestWriteCertFiles(t *testing.T) {
	certificate := []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	key := []byte("-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n")
	tests := []struct {
		name        string
		existing    map[string][]byte
		data        map[string][]byte
		wantWritten bool
		wantFiles   map[string][]byte
	}{
		{
			name:      "the Secret before the rotator's first certificate writes nothing",
			data:      nil,
			wantFiles: map[string][]byte{},
		},
		{
			name:      "a certificate without its key writes nothing",
			data:      map[string][]byte{CertFile: certificate},
			wantFiles: map[string][]byte{},
		},
		{
			name:        "a certificate and its key are written, and nothing else of the Secret (its CA key stays there)",
			data:        map[string][]byte{CertFile: certificate, KeyFile: key, "ca.crt": []byte("ca"), "ca.key": []byte("ca key")},
			wantWritten: true,
			wantFiles:   map[string][]byte{CertFile: certificate, KeyFile: key},
		},
		{
			name:      "the same certificate again changes nothing",
			existing:  map[string][]byte{CertFile: certificate, KeyFile: key},
			data:      map[string][]byte{CertFile: certificate, KeyFile: key},
			wantFiles: map[string][]byte{CertFile: certificate, KeyFile: key},
		},
		{
			name:        "a renewed certificate replaces the old one",
			existing:    map[string][]byte{CertFile: []byte("old"), KeyFile: []byte("old key")},
			data:        map[string][]byte{CertFile: certificate, KeyFile: key},
			wantWritten: true,
			wantFiles:   map[string][]byte{CertFile: certificate, KeyFile: key},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			dir := filepath.Join(t.TempDir(), "serving-certs")
			for name, content := range tt.existing {
				g.Expect(os.MkdirAll(dir, 0o700)).To(Succeed())
				g.Expect(os.WriteFile(filepath.Join(dir, name), content, 0o600)).To(Succeed())
			}
			written, err := WriteCertFiles(dir, tt.data)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(written).To(Equal(tt.wantWritten))

			files := map[string][]byte{}
			entries, err := os.ReadDir(dir)
			if !os.IsNotExist(err) {
				g.Expect(err).NotTo(HaveOccurred())
			}
			for _, entry := range entries {
				content, err := os.ReadFile(filepath.Join(dir, entry.Name()))
				g.Expect(err).NotTo(HaveOccurred())
				files[entry.Name()] = content
				info, err := entry.Info()
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)), "%s is readable by the operator only", entry.Name())
			}
			g.Expect(files).To(Equal(tt.wantFiles))
		})
	}
}

func TestWriteCertFilesSaysWhereItCannotWrite(t *testing.T) {
	g := NewWithT(t)
	file := filepath.Join(t.TempDir(), "not-a-directory")
	g.Expect(os.WriteFile(file, nil, 0o600)).To(Succeed())
	_, err := WriteCertFiles(filepath.Join(file, "serving-certs"), map[string][]byte{CertFile: []byte("c"), KeyFile: []byte("k")})
	g.Expect(err).To(MatchError(ContainSubstring("create the webhook certificate directory")))
	g.Expect(err).To(MatchError(ContainSubstring("not-a-directory")))
}

func TestProvisionRefusesOptionsThatNameNothing(t *testing.T) {
	g := NewWithT(t)
	_, err := Provision(nil, Options{Namespace: "profilesync-system", CertDir: "/certs"})
	g.Expect(err).To(MatchError(And(
		ContainSubstring("the Secret name of the webhook's serving certificate is empty"),
		ContainSubstring("the Service name of the webhook's serving certificate is empty"),
		ContainSubstring("the webhook configuration name of the webhook's serving certificate is empty"))))
}
