package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/profilesync/profilesync/internal/render/mergekeys"
)

func newOpenAPICommand() *cobra.Command {
	return &cobra.Command{
		Use:   "openapi",
		Short: "Print the kustomize OpenAPI schema of CloudProfile and NamespacedCloudProfile",
		Long: `Prints the OpenAPI schema that makes kustomize merge our kinds' lists by
key: Kubernetes and machine image versions by version, machine images,
machine types, volume types and regions by name, lifecycle stages by
classification. It is generated from the CRDs, and 'profilesync build' and
the operator use it in every build.

Save it in the repository and name it in a kustomization's openapi field,
and plain 'kustomize build' merges strategic-merge patches of profiles the
same way. One difference remains: kustomize moves a patched list entry to
the front of its list (kustomize#5904), which 'profilesync build' and the
operator do not, because a lifecycle's stages must stay in order.`,
		Example: `  profilesync openapi > profilesync-openapi.json
  # overlays/prod/kustomization.yaml:
  #   openapi:
  #     path: ../../profilesync-openapi.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			schema, err := mergekeys.OpenAPISchema()
			if err != nil {
				return fmt.Errorf("generating the OpenAPI schema: %w", err)
			}
			_, err = cmd.OutOrStdout().Write(schema)
			return err
		},
	}
}
