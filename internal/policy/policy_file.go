package policy

// PolicyFileName is the name of a landscape's versioning policy file
// (internal/policy). It lives among the profiles in Git but holds none, so
// reading a directory of YAML files skips it, as it skips kustomization
// files: a plain directory build and the CLI's -f DIRECTORY.
const PolicyFileName = "profilesync-policy.yaml"

// IsPolicyFile reports whether name, a file's base name, is a versioning
// policy file.
func IsPolicyFile(name string) bool { return name == PolicyFileName }
