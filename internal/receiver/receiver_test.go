package receiver

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

const webhookToken = "s3cr3t-webhook-token"

const pushBody = `{"ref":"refs/heads/main","after":"0000000000000000000000000000000000000000"}`

func TestHookSignatureVerification(t *testing.T) {
	body := []byte(pushBody)
	for _, tc := range []struct {
		name   string
		header map[string]string
		want   bool
	}{
		{"a GitHub HMAC of the body verifies", map[string]string{GitHubSignatureHeader: hmacHex(webhookToken, pushBody)}, true},
		{"a generic HMAC of the body verifies", map[string]string{SignatureHeader: hmacHex(webhookToken, pushBody)}, true},
		{"the GitLab token verifies", map[string]string{GitLabTokenHeader: webhookToken}, true},
		{"all three together verify", map[string]string{GitHubSignatureHeader: hmacHex(webhookToken, pushBody), SignatureHeader: hmacHex(webhookToken, pushBody), GitLabTokenHeader: webhookToken}, true},
		{"no header does not verify", map[string]string{"X-GitHub-Event": "push"}, false},
		{"an HMAC with another key does not verify", map[string]string{SignatureHeader: hmacHex("other", pushBody)}, false},
		{"a sha1 signature does not verify", map[string]string{GitHubSignatureHeader: "sha1=" + strings.TrimPrefix(hmacHex(webhookToken, pushBody), "sha256=")}, false},
		{"a signature that is not hex does not verify", map[string]string{SignatureHeader: "sha256=zz"}, false},
		{"a prefix of the GitLab token does not verify", map[string]string{GitLabTokenHeader: webhookToken[:5]}, false},
		{"one wrong header among right ones does not verify", map[string]string{GitHubSignatureHeader: hmacHex(webhookToken, pushBody), SignatureHeader: hmacHex("other", pushBody)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			header := http.Header{}
			for k, v := range tc.header {
				header.Set(k, v)
			}
			g.Expect(verifyHook(header, body, []byte(webhookToken))).To(Equal(tc.want))
		})
	}
}

func TestHookPathsNameANamespaceAndAName(t *testing.T) {
	for _, tc := range []struct {
		path string
		ok   bool
	}{
		{"/hook/team-a/dev", true},
		{"/hook/team-a/dev.landscape", true},
		{"/hook/team-a", false},
		{"/hook/team-a/", false},
		{"/hook//dev", false},
		{"/hook/team-a/dev/x", false},
		{"/hook/Team-A/dev", false},
		{"/hooks/team-a/dev", false},
		{"/hook/../dev", false},
	} {
		t.Run(tc.path, func(t *testing.T) {
			g := NewWithT(t)
			_, ok := hookKey(tc.path)
			g.Expect(ok).To(Equal(tc.ok))
		})
	}
}

func hmacHex(token, body string) string {
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}
