package gitserver

import (
	"fmt"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// signCommit rewrites commit of the bare repository at dir with the
// signature sign makes over it, as `git commit -S` does, and returns the
// signed commit's SHA-1. go-git writes the gpgsig header, so the commit is
// laid out as Git lays out a signed one.
func signCommit(dir, commit string, sign SignFunc) (string, error) {
	repository, err := git.PlainOpen(dir)
	if err != nil {
		return "", fmt.Errorf("sign commit %s: open %s: %w", commit, dir, err)
	}
	object, err := repository.CommitObject(plumbing.NewHash(commit))
	if err != nil {
		return "", fmt.Errorf("sign commit %s: %w", commit, err)
	}
	payload := &plumbing.MemoryObject{}
	if err := object.EncodeWithoutSignature(payload); err != nil {
		return "", fmt.Errorf("sign commit %s: encode its payload: %w", commit, err)
	}
	reader, err := payload.Reader()
	if err != nil {
		return "", fmt.Errorf("sign commit %s: read its payload: %w", commit, err)
	}
	defer reader.Close()
	if object.PGPSignature, err = sign(reader); err != nil {
		return "", fmt.Errorf("sign commit %s: %w", commit, err)
	}
	signed := repository.Storer.NewEncodedObject()
	if err := object.Encode(signed); err != nil {
		return "", fmt.Errorf("sign commit %s: encode it signed: %w", commit, err)
	}
	hash, err := repository.Storer.SetEncodedObject(signed)
	if err != nil {
		return "", fmt.Errorf("sign commit %s: store it signed: %w", commit, err)
	}
	return hash.String(), nil
}
