package servingcert

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// WriteCertFiles writes the certificate and key of a Secret's data (tls.crt,
// tls.key) into dir, and says whether it changed a file. Data without both,
// as in the Secret before the rotator's first certificate, writes nothing.
// Each file is replaced whole (a temporary file renamed over it), the key
// before the certificate: the rotator takes the certificate's file as the
// sign that both are there, and the webhook server never reads half a file.
func WriteCertFiles(dir string, data map[string][]byte) (bool, error) {
	cert, key := data[CertFile], data[KeyFile]
	if len(cert) == 0 || len(key) == 0 {
		return false, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, fmt.Errorf("create the webhook certificate directory: %w", err)
	}
	written := false
	for _, file := range []struct {
		name    string
		content []byte
	}{{KeyFile, key}, {CertFile, cert}} {
		changed, err := replaceFile(filepath.Join(dir, file.name), file.content)
		if err != nil {
			return written, err
		}
		written = written || changed
	}
	return written, nil
}

// replaceFile gives path the content, unless it has it already.
func replaceFile(path string, content []byte) (bool, error) {
	current, err := os.ReadFile(path)
	if err == nil && bytes.Equal(current, content) {
		return false, nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	temp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	defer func() { _ = os.Remove(temp.Name()) }()
	if _, err := temp.Write(content); err != nil {
		_ = temp.Close()
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	if err := temp.Close(); err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(temp.Name(), path); err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	return true, nil
}
