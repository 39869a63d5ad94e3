package gitsource

import (
	"context"
	"errors"
	"net/url"
	"regexp"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
)

// redactedUserinfo replaces the user information of a URL.
const redactedUserinfo = "***"

// minimumSecretLength is the shortest credential value that is also
// scrubbed from error text by value. Shorter values would match ordinary
// words of the message and make it unreadable, and are guessable anyway.
const minimumSecretLength = 4

// userinfoInURL matches the user information of any URL in a text,
// "https://user:password@" → group 1 "https://".
var userinfoInURL = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/?#@\s"']+@`)

// RedactURL returns rawURL with any user information (user name, password
// or token) replaced by "***", like https://***@host/repo.git, so that it can
// be put into errors, events, logs and status. URLs without user
// information are returned unchanged.
func RedactURL(rawURL string) string {
	return userinfoInURL.ReplaceAllString(rawURL, "${1}"+redactedUserinfo+"@")
}

// redactText removes credentials from a message: user information of every
// URL in it, and every secret value (passwords, tokens) spelt out literally
// or URL-escaped.
func redactText(text string, secrets []string) string {
	text = RedactURL(text)
	for _, secret := range secrets {
		if len(secret) < minimumSecretLength {
			continue
		}
		text = strings.ReplaceAll(text, secret, redactedUserinfo)
		if escaped := url.QueryEscape(secret); escaped != secret {
			text = strings.ReplaceAll(text, escaped, redactedUserinfo)
		}
		if escaped := url.PathEscape(secret); escaped != secret {
			text = strings.ReplaceAll(text, escaped, redactedUserinfo)
		}
	}
	return text
}

// oneLine joins the lines of a message with spaces and drops the empty
// tails transports leave (go-git appends the server's response body, which
// may be empty or end in a newline), so the message fits a condition.
func oneLine(message string) string {
	lines := strings.Split(message, "\n")
	kept := lines[:0]
	for _, line := range lines {
		if line = strings.TrimSpace(line); line != "" {
			kept = append(kept, line)
		}
	}
	return strings.TrimRight(strings.Join(kept, " "), ": ")
}

// safeCauses are the errors a redactedError still lets errors.Is find. They
// are sentinels whose text holds no credentials; everything else in the
// chain (url.Error and friends, which quote full URLs) stays unreachable so
// that no caller can print a credential by unwrapping.
var safeCauses = []error{
	context.Canceled,
	context.DeadlineExceeded,
	transport.ErrAuthenticationRequired,
	transport.ErrAuthorizationFailed,
	transport.ErrRepositoryNotFound,
	transport.ErrEmptyRemoteRepository,
	ErrInvalidRequest,
	ErrReferenceNotFound,
}

// redactedError is an error whose text has had credentials removed. It
// unwraps only to the safeCauses found in the original chain.
type redactedError struct {
	message string
	causes  []error
}

func (e *redactedError) Error() string { return e.message }

// Unwrap returns the credential-free sentinels of the original error so that
// errors.Is keeps working.
func (e *redactedError) Unwrap() []error { return e.causes }

// redactError returns err with credentials removed from its text; nil stays
// nil. See redactedError.
func redactError(err error, secrets []string) error {
	if err == nil {
		return nil
	}
	redacted := &redactedError{message: oneLine(redactText(err.Error(), secrets))}
	for _, cause := range safeCauses {
		if errors.Is(err, cause) {
			redacted.causes = append(redacted.causes, cause)
		}
	}
	return redacted
}
