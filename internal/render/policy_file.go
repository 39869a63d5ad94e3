package render

// PolicyFileName is the name of a landscape's versioning policy file
// (internal/policy). It lives among the profiles in Git but holds none, so
// reading a directory of YAML files skips it, as it skips kustomization
// files: a plain directory build and the CLI's -f DIRECTORY.
const PolicyFileName = "profilesync-policy.yaml"

// IsPolicyFile reports whether name, a file's base name, is a versioning
// policy file.
func IsPolicyFile(name string) bool { return name == PolicyFileName }

// RolloutFileName is the name of the repository's rollout file
// (internal/rollout), at its root. Like a policy file, it holds no profiles.
const RolloutFileName = "profilesync-rollout.yaml"

// IsSettingsFile reports whether name, a file's base name, is one of the
// repository's settings rather than profiles: a versioning policy file or
// the rollout file. Reading a directory of YAML files skips them.
func IsSettingsFile(name string) bool { return IsPolicyFile(name) || name == RolloutFileName }
