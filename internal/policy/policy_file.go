package policy

// FileName is the name of a landscape's versioning policy file. The file
// nearest to a built overlay, in the overlay's directory or one above it up
// to the repository root, is the landscape's policy (Find). It lives among
// the profiles in Git but holds none, so reading a directory of YAML files
// skips it, as it skips kustomization files: a plain directory build and the
// CLI's -f DIRECTORY.
const FileName = "profilesync-policy.yaml"

// IsFileName reports whether name, a file's base name, is a versioning
// policy file.
func IsFileName(name string) bool { return name == FileName }
