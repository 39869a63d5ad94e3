package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/lifecycle"
	"github.com/profilesync/profilesync/internal/render/profile"
)

// updatePathOptions are update-path's flags.
type updatePathOptions struct {
	at                timeFlag
	inputs            inputOptions
	profile           string
	namespace         string
	kubernetesVersion string
	machineImage      string
	imageVersion      string
}

func newUpdatePathCommand() *cobra.Command {
	var opts updatePathOptions
	cmd := &cobra.Command{
		Use:   "update-path [--at TIME] -f PATH --profile NAME [--namespace NS] (--kubernetes VERSION | --machine-image IMAGE --version VERSION)",
		Short: "Print the automatic and forced update targets of one version",
		Long: `Prints where a cluster on a version moves at TIME, as one JSON object
{"auto": VERSION or null, "force": VERSION or null}: "auto" is the target of an
automatic update, "force" the target if the version were expired (null for a
machine image with update strategy major, which has no forced path). As in
Gardener (docs/semantics.md §4), a forced update prefers versions that are not
expired and, when every version it may move to is expired, names the highest
expired one: the next maintenance moves the cluster on again.

The version must be one the profile lists (as written, or equal as a semantic
version: 1.7 is 1.7.0); any other is an error naming the profile, its kind and
the versions it lists, as an unknown machine image is.

--profile names a CloudProfile; with --namespace it names a
NamespacedCloudProfile, whose merged spec is used (its parent must be among the
inputs). The inputs are validated as a set first, as 'evaluate' does.`,
		Example: `  profilesync update-path -f profiles/ --profile aws --kubernetes 1.31.6
  profilesync update-path -f profiles/ --profile aws-team-a --namespace team-a \
      --machine-image gardenlinux --version 1443.10.0`,
		DisableFlagsInUseLine: true,
		// runUpdatePath refuses arguments after checking the flags, whose
		// messages say more about a mistyped command line.
		Args: cobra.ArbitraryArgs,
		RunE: failOnInput(func(cmd *cobra.Command, args []string) error {
			return runUpdatePath(opts, args, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		}),
	}
	flags := cmd.Flags()
	flags.SortFlags = false
	flags.Var(&opts.at, "at", "decide at this RFC 3339 time (default now)")
	bindInputs(flags, &opts.inputs)
	flags.StringVar(&opts.profile, "profile", "", "the profile's name")
	flags.StringVar(&opts.namespace, "namespace", "", "the namespace of a NamespacedCloudProfile")
	flags.StringVar(&opts.kubernetesVersion, "kubernetes", "", "the Kubernetes version a cluster runs")
	flags.StringVar(&opts.machineImage, "machine-image", "", "the machine image a cluster runs")
	flags.StringVar(&opts.imageVersion, "version", "", "the machine image version a cluster runs")
	return cmd
}

func runUpdatePath(opts updatePathOptions, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	subject, err := updateSubject(opts.kubernetesVersion, opts.machineImage, opts.imageVersion)
	if err == nil && opts.profile == "" {
		err = fmt.Errorf("--profile is required")
	}
	if err == nil && len(args) > 0 {
		err = fmt.Errorf("unexpected argument %q", args[0])
	}
	if err != nil {
		return usageError{err: err}
	}
	reader, err := newInputReader(opts.inputs)
	if err != nil {
		return err
	}
	read, err := readInputs(opts.inputs, reader, stdin)
	if err != nil {
		return err
	}
	now := opts.at.or(time.Now())
	evaluated, ok := evaluateProfiles(read, now, stderr)
	if !ok {
		return errInvalidInputReported
	}
	object, found := findProfile(evaluated, opts.profile, opts.namespace)
	if !found {
		return fmt.Errorf("update-path: no %s among the inputs", wantedProfile(opts.profile, opts.namespace))
	}
	targets, err := lifecycle.Paths(object.EffectiveSpec(), subject, now)
	if err == nil {
		// Checked after Paths so that an unknown machine image or a version
		// that does not parse keeps its own message.
		err = lifecycle.CheckListed(object.EffectiveSpec(), subject)
	}
	if err != nil {
		return fmt.Errorf("%s: %s: %w", object.File, object.Ref(), err)
	}
	out, err := json.Marshal(targets)
	if err != nil {
		return fmt.Errorf("update-path: encoding the result: %w", err)
	}
	fmt.Fprintf(stdout, "%s\n", out)
	return nil
}

// updateSubject checks that exactly one of the two forms was given.
func updateSubject(kubernetesVersion, machineImage, imageVersion string) (lifecycle.UpdateSubject, error) {
	switch {
	case kubernetesVersion != "" && (machineImage != "" || imageVersion != ""):
		return lifecycle.UpdateSubject{}, fmt.Errorf("give either --kubernetes VERSION or --machine-image IMAGE --version VERSION, not both")
	case kubernetesVersion != "":
		return lifecycle.UpdateSubject{Version: kubernetesVersion}, nil
	case machineImage != "" && imageVersion != "":
		return lifecycle.UpdateSubject{MachineImage: machineImage, Version: imageVersion}, nil
	case machineImage != "" || imageVersion != "":
		return lifecycle.UpdateSubject{}, fmt.Errorf("--machine-image and --version go together")
	}
	return lifecycle.UpdateSubject{}, fmt.Errorf("give --kubernetes VERSION or --machine-image IMAGE --version VERSION")
}

// findProfile finds the CloudProfile name, or with a namespace the
// NamespacedCloudProfile namespace/name.
func findProfile(objects []profile.Object, name, namespace string) (profile.Object, bool) {
	kind := v1alpha1.CloudProfileKind
	if namespace != "" {
		kind = v1alpha1.NamespacedCloudProfileKind
	}
	for _, o := range objects {
		if o.Kind() == kind && o.Name() == name && o.Namespace() == namespace {
			return o, true
		}
	}
	return profile.Object{}, false
}

func wantedProfile(name, namespace string) string {
	if namespace == "" {
		return fmt.Sprintf("CloudProfile %q", name)
	}
	return fmt.Sprintf("NamespacedCloudProfile %q in namespace %q", name, namespace)
}
