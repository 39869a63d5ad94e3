package gitsource

import (
	"context"
	"errors"
	"io"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/profilesync/profilesync/internal/repofile"
)

// redacted replaces credentials: the user information of URLs, query values
// and credential values in error text.
const redacted = "***"

// minimumSecretLength is the shortest credential value that is also
// scrubbed from error text by value. Shorter values would match ordinary
// words of the message and make it unreadable, and are guessable anyway.
const minimumSecretLength = 4

// schemeStart matches the beginning of a URL with a scheme, like "https://".
var schemeStart = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://`)

// RedactURL returns rawURL with everything that may be a credential replaced
// by "***", so that it can be put into errors, events, logs and status:
//   - the user information (user name, password or token):
//     https://***@host/repo.git, ssh://***@host/repo.git, and ***@host:repo
//     for scp-like addresses;
//   - every query value: https://host/repo.git?access_token=***.
//
// It never relies on url.Parse, which fails on passwords with spaces, quotes
// or bad escapes and takes the part of a password before an unescaped "/",
// "?" or "#" for the host. Instead the user information is taken to end at
// the last "@" of the URL, wherever it is: that hides every password, at the
// price of hiding a path up to an "@" in it too. URLs without user
// information or query are returned unchanged.
//
// rawURL may also be a message with URLs in it; each is redacted. A text
// that starts with a URL is taken as one URL, to its end, because a password
// may contain spaces, quotes and what looks like another URL.
func RedactURL(rawURL string) string {
	return redactSCPLikeUserinfo(redactSchemeURLs(rawURL))
}

// redactSchemeURLs redacts the user information and query values of the
// URLs with a scheme in text (see RedactURL).
func redactSchemeURLs(text string) string {
	starts := schemeStart.FindAllStringIndex(text, -1)
	if len(starts) == 0 {
		return text
	}
	wholeTextIsOneURL := starts[0][0] == 0
	var out strings.Builder
	copied := 0 // text[:copied] is in out already
	for i, start := range starts {
		authority := start[1]
		if authority <= copied {
			// Inside the user information or query of the URL before.
			continue
		}
		// In a message, a URL's user information may still hold spaces or
		// quotes, so it is looked for up to the next URL that starts a word
		// rather than up to the next space.
		end := len(text)
		if !wholeTextIsOneURL {
			end = nextURLStartingAWord(text, starts[i+1:])
		}
		host := authority
		if at := strings.LastIndexByte(text[authority:end], '@'); at >= 0 {
			host = authority + at
			out.WriteString(text[copied:authority])
			out.WriteString(redacted)
			copied = host
		}
		urlEnd := end
		if !wholeTextIsOneURL {
			if i := strings.IndexFunc(text[host:end], isWordDelimiter); i >= 0 {
				urlEnd = host + i
			}
		}
		query := -1
		if q := strings.IndexByte(text[host:urlEnd], '?'); q >= 0 {
			query = host + q + 1
		} else if strings.Contains(text[authority:host], "?") {
			// The "@" may have been inside a query value ("?email=a@b&t=x"),
			// so what follows it is query too.
			query = host + 1
		}
		if query >= 0 {
			out.WriteString(text[copied:query])
			out.WriteString(redactQuery(text[query:urlEnd]))
			copied = urlEnd
		}
		if wholeTextIsOneURL {
			break
		}
	}
	out.WriteString(text[copied:])
	return out.String()
}

// nextURLStartingAWord is the index of the first of starts (scheme matches)
// that begins a word, or len(text). A scheme in the middle of a word, like
// in "?next=https://", belongs to the URL before.
func nextURLStartingAWord(text string, starts [][]int) int {
	for _, start := range starts {
		if start[0] > 0 && isWordDelimiter(rune(text[start[0]-1])) {
			return start[0]
		}
	}
	return len(text)
}

// isWordDelimiter says whether r ends a URL in a message.
func isWordDelimiter(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\r', '"', '\'', '`', '<', '>', '(', ')':
		return true
	}
	return false
}

// redactQuery replaces every value of a query, the part of a URL after "?",
// keeping the names: a=***&b=***. A part without "=" may be a bare token and
// is replaced whole. The last value runs to the end, fragment included,
// because an unescaped "#" may be part of a token.
func redactQuery(query string) string {
	parts := strings.Split(query, "&")
	for i, part := range parts {
		if name, _, hasValue := strings.Cut(part, "="); hasValue {
			parts[i] = name + "=" + redacted
		} else if part != "" {
			parts[i] = redacted
		}
	}
	return strings.Join(parts, "&")
}

// redactSCPLikeUserinfo redacts the user of scp-like addresses,
// user@host:path, in text: every word without "://" that has a ":" after its
// last "@".
func redactSCPLikeUserinfo(text string) string {
	var out strings.Builder
	copied := 0
	for wordStart := 0; wordStart < len(text); {
		wordEnd := len(text)
		if i := strings.IndexFunc(text[wordStart:], isWordDelimiter); i >= 0 {
			wordEnd = wordStart + i
		}
		word := text[wordStart:wordEnd]
		at := strings.LastIndexByte(word, '@')
		if at > 0 && word[:at] != redacted && !strings.Contains(word, "://") && strings.Contains(word[at:], ":") {
			out.WriteString(text[copied:wordStart])
			out.WriteString(redacted)
			copied = wordStart + at
		}
		wordStart = wordEnd + 1
	}
	out.WriteString(text[copied:])
	return out.String()
}

// redactText removes credentials from a message: everything RedactURL
// removes, and every secret value (passwords, tokens) spelt out literally,
// URL-escaped or Go-quoted.
func redactText(text string, secrets []string) string {
	text = RedactURL(text)
	// Longest first, so that a secret containing another is not left
	// half-replaced.
	secrets = append([]string(nil), secrets...)
	sort.Slice(secrets, func(i, j int) bool { return len(secrets[i]) > len(secrets[j]) })
	for _, secret := range secrets {
		if len(secret) < minimumSecretLength {
			continue
		}
		// %q in errors such as url.Error's escapes quotes and control
		// characters.
		quoted := strconv.Quote(secret)
		for _, spelling := range []string{
			secret,
			url.QueryEscape(secret),
			url.PathEscape(secret),
			quoted[1 : len(quoted)-1],
		} {
			text = strings.ReplaceAll(text, spelling, redacted)
		}
	}
	return text
}

// oneLineWithoutEmptyTail makes a message one line as every problem is
// (repofile.OneLine) and then drops the empty tail a transport leaves (go-git
// appends the server's response body, which may be empty: the message then
// ends in ": "), so the message fits a condition. The problems of profiles
// keep what they end with, so the cut is not in OneLine itself.
func oneLineWithoutEmptyTail(message string) string {
	return strings.TrimRight(strings.TrimSpace(repofile.OneLine(message)), ": ")
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
	ErrCheckoutTooLarge,
	ErrObjectTooLarge,
	ErrRecordRefMoved,
	ErrBaseMoved,
	ErrRecordPushRejected,
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
	redacted := &redactedError{message: oneLineWithoutEmptyTail(redactText(err.Error(), secrets))}
	for _, cause := range safeCauses {
		if errors.Is(err, cause) {
			redacted.causes = append(redacted.causes, cause)
		}
	}
	if isConnectionFailure(err) {
		redacted.causes = append(redacted.causes, ErrConnectionFailed)
	}
	// Hashes, kinds and sizes: nothing a credential could be in.
	var tooLarge *ObjectTooLargeError
	if errors.As(err, &tooLarge) {
		redacted.causes = append(redacted.causes, tooLarge)
	}
	var refused *RevisionRefusedError
	if errors.As(err, &refused) {
		redacted.causes = append(redacted.causes, &RevisionRefusedError{Revision: refused.Revision, Err: ErrObjectTooLarge})
	}
	return redacted
}

// isConnectionFailure tells whether err, as net/http and go-git return it,
// is a connection refused, reset or closed mid-answer (see
// ErrConnectionFailed).
func isConnectionFailure(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
