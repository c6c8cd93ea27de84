package archtest

import (
	"bufio"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/oxypipe/oxypipe/internal/topology"
)

// TestEveryStageIsWiredEverywhere checks the steps of adding a stage that
// the compiler cannot catch: every stage of the stage table in
// internal/topology has its package internal/<stage>, which the one-process
// cluster (internal/local) imports; a main package cmd/<stage> that links
// it; the Dockerfile builds that binary; docker-compose.yml runs it as a
// service; a resource of deploy/k8s's kustomization runs it and scales it on
// its consumer; and the distributed end-to-end test builds and starts it.
// docs/architecture.md ("Adding a stage") walks through the same steps.
func TestEveryStageIsWiredEverywhere(t *testing.T) {
	t.Parallel()
	stages := topology.Stages()
	if len(stages) == 0 {
		t.Fatal("topology.Stages() is empty: the test checks nothing")
	}
	root := moduleRoot(t)

	local := goList(t, module+"/internal/local")
	dockerfile := read(t, root, "Dockerfile")
	compose := read(t, root, "docker-compose.yml")
	k8s := kustomizeResources(t, root)
	e2eLiterals := stringLiterals(t, filepath.Join(root, "internal", "e2e", "distributed_test.go"))

	for _, s := range stages {
		name := string(s)
		pkg := module + "/internal/" + name
		t.Run(name, func(t *testing.T) {
			if !slices.Contains(local.Imports, pkg) {
				t.Errorf("internal/local does not import %s: the one-process cluster (oxy run) would run without the %s stage", pkg, name)
			}

			if _, err := os.Stat(filepath.Join(root, "cmd", name)); err != nil {
				t.Errorf("no directory cmd/%s: the stage has no binary", name)
			} else if main := goList(t, module+"/cmd/"+name); main.Name != "main" {
				t.Errorf("cmd/%s is package %s, not a main package", name, main.Name)
			} else if !slices.Contains(main.Deps, pkg) {
				t.Errorf("cmd/%s does not link %s: the binary named for the stage does not run it", name, pkg)
			}

			if !regexp.MustCompile(`\./cmd/` + name + `\b`).MatchString(goBuildCommand(dockerfile)) {
				t.Errorf("the Dockerfile's go build does not build ./cmd/%s: the image has no %s binary", name, name)
			}

			if !regexp.MustCompile(`(?m)^\s+command:\s*\[\s*"` + name + `"`).MatchString(compose) {
				t.Errorf(`docker-compose.yml has no service with command: ["%s"]: the local cluster runs without the %s stage`, name, name)
			}

			runs, scales := false, false
			for _, res := range k8s {
				runs = runs || strings.Contains(res.text, `command: ["/usr/local/bin/`+name+`"]`)
				scales = scales || (strings.Contains(res.text, "kind: ScaledObject") &&
					regexp.MustCompile(`(?m)^\s+consumer:\s*"?`+name+`"?\s*$`).MatchString(res.text))
			}
			if !runs {
				t.Errorf(`no resource of deploy/k8s/kustomization.yaml runs command: ["/usr/local/bin/%s"]: the cluster has no %s Deployment`, name, name)
			}
			if !scales {
				t.Errorf("no ScaledObject of deploy/k8s/kustomization.yaml's resources scales on consumer %s", name)
			}

			if !e2eLiterals["./cmd/"+name] || !e2eLiterals[name] {
				t.Errorf(`internal/e2e/distributed_test.go does not build "./cmd/%s" and start "%s": the distributed run is tested without the stage`, name, name)
			}
		})
	}
}

// listedPackage is the part of `go list -json` for one package this test
// reads.
type listedPackage struct {
	Name    string
	Imports []string
	Deps    []string
}

func goList(t *testing.T, path string) listedPackage {
	t.Helper()
	out, err := exec.Command("go", "list", "-json=Name,Imports,Deps", path).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", path, err)
	}
	var p listedPackage
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatalf("go list %s: %v", path, err)
	}
	return p
}

func read(t *testing.T, root, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// goBuildCommand returns the Dockerfile's go build command, its continuation
// lines joined.
func goBuildCommand(dockerfile string) string {
	joined := strings.ReplaceAll(dockerfile, "\\\n", " ")
	for line := range strings.SplitSeq(joined, "\n") {
		if strings.Contains(line, "go build") {
			return line
		}
	}
	return ""
}

type k8sResource struct {
	name, text string
}

// kustomizeResources reads the files deploy/k8s/kustomization.yaml lists
// under resources: what `kubectl apply -k deploy/k8s` applies.
func kustomizeResources(t *testing.T, root string) []k8sResource {
	t.Helper()
	dir := filepath.Join(root, "deploy", "k8s")
	sc := bufio.NewScanner(strings.NewReader(read(t, dir, "kustomization.yaml")))
	var out []k8sResource
	inResources := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "resources:":
			inResources = true
		case inResources && strings.HasPrefix(strings.TrimSpace(line), "- "):
			name := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "- "))
			out = append(out, k8sResource{name: name, text: read(t, dir, name)})
		case inResources && line != "" && !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "#"):
			inResources = false
		}
	}
	if len(out) == 0 {
		t.Fatal("deploy/k8s/kustomization.yaml lists no resources")
	}
	return out
}

// stringLiterals returns the set of string literals in a Go file.
func stringLiterals(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	lits := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil {
				lits[s] = true
			}
		}
		return true
	})
	return lits
}
