package policy

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/profilesync/profilesync/internal/repofile"
)

// DecodeError is everything wrong with a policy file, one problem per line,
// each naming the file and, where it is known, the field.
type DecodeError = repofile.DecodeError

// settingsFile is the policy file as repofile.DecodeSettings names it.
var settingsFile = repofile.SettingsFile{Kind: "policy", Shape: "a mapping with apiVersion, kind and rules", Docs: "docs/policy.md"}

// Decode reads a policy file strictly: unknown and duplicate fields, values
// of the wrong type and rules without their parameters are refused, every
// problem at once, as a *DecodeError naming file (as given) and field.
func Decode(file string, data []byte) (*Policy, error) {
	fail := func(problems ...string) (*Policy, error) {
		return nil, &DecodeError{File: file, Problems: problems}
	}
	var p Policy
	problems, decoded := settingsFile.DecodeSettings(data, &p)
	if !decoded {
		return fail(problems...)
	}
	for _, e := range p.validate() {
		problems = append(problems, e.Error())
	}
	if len(problems) > 0 {
		return fail(problems...)
	}
	return &p, nil
}

var severities = []Severity{SeverityWarning, SeverityError}

// validate checks what the schema's types cannot: the header, and that every
// rule that is on has a severity and parameters that make sense.
func (p *Policy) validate() field.ErrorList {
	var errs field.ErrorList
	if p.APIVersion != APIVersion {
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), p.APIVersion, []string{APIVersion}))
	}
	if p.Kind != Kind {
		errs = append(errs, field.NotSupported(field.NewPath("kind"), p.Kind, []string{Kind}))
	}
	rules := field.NewPath("rules")
	r := p.Rules
	if r.Supported == nil && r.Preview == nil && r.Deprecation == nil && r.Notice == nil && r.ForcedUpdates == nil {
		errs = append(errs, field.Required(rules, "a policy turns on at least one rule: supported, preview, deprecation, notice or forcedUpdates"))
	}
	severity := func(path *field.Path, s Severity) {
		switch s {
		case SeverityWarning, SeverityError:
		case "":
			errs = append(errs, field.Required(path.Child("severity"), "warning or error"))
		default:
			errs = append(errs, field.NotSupported(path.Child("severity"), s, severities))
		}
	}
	atLeast := func(path *field.Path, value, least int) {
		if value < least {
			errs = append(errs, field.Invalid(path, value, fmt.Sprintf("must be at least %d", least)))
		}
	}
	if s := r.Supported; s != nil {
		path := rules.Child("supported")
		severity(path, s.Severity)
		atLeast(path.Child("minors"), s.Minors, 1)
		atLeast(path.Child("machineImageGroups"), s.MachineImageGroups, 0)
	}
	if s := r.Preview; s != nil {
		path := rules.Child("preview")
		severity(path, s.Severity)
		if s.MaxMinors == nil && s.MaxDays == nil {
			errs = append(errs, field.Required(path, "set maxMinors, maxDays or both"))
		}
		if s.MaxMinors != nil {
			atLeast(path.Child("maxMinors"), *s.MaxMinors, 0)
		}
		if s.MaxDays != nil {
			atLeast(path.Child("maxDays"), *s.MaxDays, 0)
		}
	}
	if s := r.Deprecation; s != nil {
		path := rules.Child("deprecation")
		severity(path, s.Severity)
		if !s.OlderPatches && !s.RequireExpiry {
			errs = append(errs, field.Required(path, "set olderPatches, requireExpiry or both to true"))
		}
	}
	if s := r.Notice; s != nil {
		path := rules.Child("notice")
		severity(path, s.Severity)
		atLeast(path.Child("days"), s.Days, 1)
	}
	if s := r.ForcedUpdates; s != nil {
		severity(rules.Child("forcedUpdates"), s.Severity)
	}
	return errs
}

// Find returns the policy of the overlay at path (relative to root): the
// file named FileName in path's directory or the nearest directory above it,
// up to and including root. It returns nil and an empty name when there is
// none. file is the policy's path relative to root, with forward slashes.
//
// The file is read as every file of the repository is (repofile): a regular
// file inside root and outside .git/, through no link that leaves them, of
// at most maxSize bytes (the default maximum file size when 0).
func Find(root, path string, maxSize int64) (p *Policy, file string, err error) {
	dir := filepath.Clean(filepath.FromSlash(path))
	if !filepath.IsLocal(dir) && dir != "." {
		return nil, "", fmt.Errorf("looking for %s: %s is not inside the repository", FileName, path)
	}
	reader, err := repofile.Open(root, repofile.Limits{MaxFileSize: maxSize, MaxTotalSize: maxSize})
	if err != nil {
		return nil, "", fmt.Errorf("looking for %s: %w", FileName, err)
	}
	for {
		candidate := filepath.ToSlash(filepath.Join(dir, FileName))
		data, err := reader.ReadFile(candidate)
		if err == nil {
			p, err := Decode(candidate, data)
			return p, candidate, err
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, "", fmt.Errorf("reading the policy: %w", err)
		}
		if dir == "." {
			return nil, "", nil
		}
		dir = filepath.Dir(dir)
	}
}
