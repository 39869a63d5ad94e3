package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/lifecycle"
	"github.com/profilesync/profilesync/internal/render"
)

func init() {
	subcommands["update-path"] = subcommand{
		summary: "print the automatic and forced update targets of one version",
		run:     runUpdatePath,
	}
}

var updatePathHelp = commandHelp{
	usage: "profilesync update-path [--at TIME] -f PATH --profile NAME [--namespace NS] (--kubernetes VERSION | --machine-image IMAGE --version VERSION)",
	description: `Prints where a cluster on a version moves at TIME, as one JSON object
{"auto": VERSION or null, "force": VERSION or null}: "auto" is the target of an
automatic update, "force" the target if the version were expired (null for a
machine image with update strategy major, which has no forced path).

--profile names a CloudProfile; with --namespace it names a
NamespacedCloudProfile, whose merged spec is used (its parent must be among the
inputs). The inputs are validated as a set first, as 'evaluate' does.`,
	example: `  profilesync update-path -f profiles/ --profile aws --kubernetes 1.31.6
  profilesync update-path -f profiles/ --profile aws-team-a --namespace team-a \
      --machine-image gardenlinux --version 1443.10.0`,
}

func runUpdatePath(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	flags := newFlagSet("update-path", updatePathHelp, stdout)
	var at timeFlag
	var paths []string
	var profile, namespace, kubernetesVersion, machineImage, imageVersion string
	flags.Var(&at, "at", "decide at this RFC 3339 time (default now)")
	flags.StringArrayVarP(&paths, "filename", "f", nil, "a file, a directory or - (stdin); repeatable")
	flags.StringVar(&profile, "profile", "", "the profile's name")
	flags.StringVar(&namespace, "namespace", "", "the namespace of a NamespacedCloudProfile")
	flags.StringVar(&kubernetesVersion, "kubernetes", "", "the Kubernetes version a cluster runs")
	flags.StringVar(&machineImage, "machine-image", "", "the machine image a cluster runs")
	flags.StringVar(&imageVersion, "version", "", "the machine image version a cluster runs")
	if done, status := parseFlags(flags, args, stderr); done {
		return status
	}
	subject, err := updateSubject(kubernetesVersion, machineImage, imageVersion)
	if err == nil && profile == "" {
		err = fmt.Errorf("--profile is required")
	}
	if err == nil && flags.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q", flags.Arg(0))
	}
	if err != nil {
		return reportUsageError(flags, err, stderr)
	}
	docs, err := readInputs(paths, stdin)
	if err != nil {
		return inputError("update-path", err, stderr)
	}
	now := at.or(time.Now())
	evaluated, ok := evaluateProfiles(docs, now, stderr)
	if !ok {
		return exitInvalidInput
	}
	object, found := findProfile(evaluated, profile, namespace)
	if !found {
		fmt.Fprintf(stderr, "update-path: no %s among the inputs\n", wantedProfile(profile, namespace))
		return exitInvalidInput
	}
	targets, err := lifecycle.Paths(object.EffectiveSpec(), subject, now)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %s: %v\n", object.File, object.Ref(), err)
		return exitInvalidInput
	}
	out, err := json.Marshal(targets)
	if err != nil {
		fmt.Fprintf(stderr, "update-path: encoding the result: %v\n", err)
		return exitInvalidInput
	}
	fmt.Fprintf(stdout, "%s\n", out)
	return exitOK
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
func findProfile(objects []render.Object, name, namespace string) (render.Object, bool) {
	kind := v1alpha1.CloudProfileKind
	if namespace != "" {
		kind = v1alpha1.NamespacedCloudProfileKind
	}
	for _, o := range objects {
		if o.Kind() == kind && o.Name() == name && o.Namespace() == namespace {
			return o, true
		}
	}
	return render.Object{}, false
}

func wantedProfile(name, namespace string) string {
	if namespace == "" {
		return fmt.Sprintf("CloudProfile %q", name)
	}
	return fmt.Sprintf("NamespacedCloudProfile %q in namespace %q", name, namespace)
}
