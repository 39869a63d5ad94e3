package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/profilesync/profilesync/internal/render"
)

// bindBuildLimits binds the flags that bound a build. The manager and
// `profilesync build` share them, so that a revision the CLI accepts in a
// pull request is one the operator accepts too.
func bindBuildLimits(fs *pflag.FlagSet, limits *render.Limits) {
	*limits = render.DefaultLimits()
	fs.Var(byteSize{&limits.MaxFileSize}, render.MaxFileSizeFlag,
		"The largest file a build reads, counting YAML aliases written out (bytes, or a quantity like 4Mi).")
	fs.Var(byteSize{&limits.MaxRenderedSize}, render.MaxRenderedSizeFlag,
		"The largest rendered output of a build, and the most it reads in all (bytes, or a quantity like 32Mi).")
}

// byteSize is a flag of a size in bytes, written as a number of bytes or as
// a Kubernetes quantity (64Mi, 1G).
type byteSize struct{ bytes *int64 }

func (s byteSize) String() string {
	if s.bytes == nil {
		return ""
	}
	return resource.NewQuantity(*s.bytes, resource.BinarySI).String()
}

func (s byteSize) Set(value string) error {
	if n, err := strconv.ParseInt(value, 10, 64); err == nil {
		return s.set(n, value)
	}
	quantity, err := resource.ParseQuantity(value)
	if err != nil {
		return fmt.Errorf("not a size in bytes or a quantity like 64Mi: %q", value)
	}
	return s.set(quantity.Value(), value)
}

func (s byteSize) set(n int64, value string) error {
	if n <= 0 {
		return fmt.Errorf("a size must be positive: %q", value)
	}
	*s.bytes = n
	return nil
}

func (s byteSize) Type() string { return "SIZE" }
