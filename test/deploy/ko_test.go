package deploy

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// koConfig is the part of .ko.yaml that `make ko-build` relies on.
type koConfig struct {
	DefaultBaseImage string `json:"defaultBaseImage"`
	Builds           []struct {
		ID      string   `json:"id"`
		Main    string   `json:"main"`
		Env     []string `json:"env"`
		Flags   []string `json:"flags"`
		Ldflags []string `json:"ldflags"`
	} `json:"builds"`
}

// dockerfileImage is what the Dockerfile says about the image it builds.
type dockerfileImage struct {
	// base is the last stage's FROM, the image the binary lands in.
	base string
	// user is the last USER instruction.
	user string
	// entrypoint is the exec form of ENTRYPOINT; cmd of CMD, if any.
	entrypoint, cmd []string
	// build is the RUN instruction that runs `go build`, continuation lines
	// joined.
	build string
}

func readDockerfile(t *testing.T, name string) dockerfileImage {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatalf("open Dockerfile: %v", err)
	}
	defer f.Close()
	var image dockerfileImage
	var instruction strings.Builder
	handle := func(line string) {
		keyword, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
		rest = strings.TrimSpace(rest)
		switch keyword {
		case "FROM":
			image.base = strings.Fields(rest)[0]
		case "USER":
			image.user = rest
		case "ENTRYPOINT", "CMD":
			var exec []string
			if err := json.Unmarshal([]byte(rest), &exec); err != nil {
				t.Fatalf("Dockerfile %s %s is not in exec form: %v", keyword, rest, err)
			}
			if keyword == "ENTRYPOINT" {
				image.entrypoint = exec
			} else {
				image.cmd = exec
			}
		case "RUN":
			if strings.Contains(rest, "go build") {
				image.build = rest
			}
		}
	}
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		line := scanner.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		if continued, ok := strings.CutSuffix(line, "\\"); ok {
			instruction.WriteString(continued + " ")
			continue
		}
		instruction.WriteString(line)
		handle(instruction.String())
		instruction.Reset()
	}
	if err := scanner.Err(); err != nil {
		t.Fatalf("read Dockerfile: %v", err)
	}
	return image
}

// TestKoBuildsWhatTheDockerfileBuilds: `make ko-build` (.ko.yaml) and
// `make docker-build` (the Dockerfile) make the same image: the same base,
// user, static build flags and version stamp, and an entrypoint that is the
// binary alone, which the Deployment runs with its own arguments (ko puts
// the binary at another path, so the Deployment names no command). ko itself
// does not run here: a build takes minutes (make ko-build).
func TestKoBuildsWhatTheDockerfileBuilds(t *testing.T) {
	g := NewWithT(t)
	root := filepath.Join("..", "..")
	docker := readDockerfile(t, filepath.Join(root, "Dockerfile"))
	data, err := os.ReadFile(filepath.Join(root, ".ko.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var ko koConfig
	g.Expect(yaml.UnmarshalStrict(data, &ko)).To(Succeed(), ".ko.yaml")

	g.Expect(ko.DefaultBaseImage).To(Equal(docker.base), "the base image")
	g.Expect(ko.Builds).To(HaveLen(1))
	build := ko.Builds[0]
	g.Expect(build.Main).To(Equal("."), "the manager's main package, as `go build ... .` in the Dockerfile")
	g.Expect(docker.build).To(MatchRegexp(`go build .* \.$`))

	// CGO_ENABLED=0 and -trimpath: a static binary without build paths.
	g.Expect(build.Env).To(ConsistOf("CGO_ENABLED=0"))
	g.Expect(docker.build).To(ContainSubstring("CGO_ENABLED=0"))
	g.Expect(build.Flags).To(ConsistOf("-trimpath"))
	g.Expect(docker.build).To(ContainSubstring(" -trimpath "))

	// The same linker flags, ko's templates standing for the build args.
	ldflags := regexp.MustCompile(`-ldflags "([^"]*)"`).FindStringSubmatch(docker.build)
	g.Expect(ldflags).To(HaveLen(2), "the Dockerfile's go build sets -ldflags")
	koLdflags := strings.Join(build.Ldflags, " ")
	koLdflags = strings.NewReplacer("{{.Env.VERSION}}", "${VERSION}", "{{.Env.COMMIT}}", "${COMMIT}").Replace(koLdflags)
	g.Expect(strings.Fields(koLdflags)).To(Equal(strings.Fields(ldflags[1])), "ldflags of .ko.yaml and the Dockerfile")

	// The entrypoint is the binary alone, in both.
	g.Expect(docker.entrypoint).To(HaveLen(1), "ENTRYPOINT is the binary, no arguments")
	g.Expect(docker.cmd).To(BeEmpty(), "no CMD: the Deployment gives the arguments")
	deployment := decode[appsv1.Deployment](t, findObject(t, buildDefault(t), "Deployment", deploymentName))
	g.Expect(deployment.Spec.Template.Spec.Containers[0].Command).To(BeEmpty(),
		"the Deployment runs the image's entrypoint, wherever ko or the Dockerfile put the binary")

	// make ko-build runs ko as the Dockerfile's USER and passes the version
	// and commit that docker-build passes as build args.
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	g.Expect(err).NotTo(HaveOccurred())
	recipe := makeRecipe(t, string(makefile), "ko-build")
	g.Expect(recipe).To(ContainSubstring("--image-user=" + docker.user))
	g.Expect(recipe).To(ContainSubstring("VERSION=$(VERSION) COMMIT=$(COMMIT) "))
	g.Expect(makeRecipe(t, string(makefile), "docker-build")).To(ContainSubstring("--build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT)"))
}

// makeRecipe returns the recipe of a Makefile target, continuation lines
// joined.
func makeRecipe(t *testing.T, makefile, target string) string {
	t.Helper()
	lines := strings.Split(makefile, "\n")
	for i, line := range lines {
		if !strings.HasPrefix(line, target+":") {
			continue
		}
		var recipe []string
		for _, next := range lines[i+1:] {
			if !strings.HasPrefix(next, "\t") {
				break
			}
			recipe = append(recipe, strings.TrimSpace(strings.TrimSuffix(next, "\\")))
		}
		return strings.Join(recipe, " ")
	}
	t.Fatalf("the Makefile has no target %s", target)
	return ""
}
