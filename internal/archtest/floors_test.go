package archtest

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// floors puts every package of the module on a floor. A package may import
// packages of its own floor or of a lower one, never of a higher one: the
// vocabulary never learns of a store, a store never of a stage, a stage never
// of the process that runs it. The floors and what each one holds are
// explained in docs/architecture.md, whose floor table must list the same
// packages on the same floors (TestTheArchitectureDocShowsTheFloors).
//
// Only a package's own (non-test) files count: a test may use a package of
// any floor as its harness, as long as Go allows the import.
var floors = map[string]int{
	// 0: leaves, importing no package of this module.
	"pkg/oxytype":        0,
	"pkg/retry":          0,
	"internal/redact":    0,
	"internal/jsonscan":  0,
	"internal/jsonvalid": 0,
	"internal/promreg":   0,
	"internal/health":    0,
	"internal/testutil":  0,
	"internal/procenv":   0,
	"internal/memlimit":  0,

	// 1: the data formats built on the vocabulary.
	"pkg/payload":              1,
	"pkg/messages":             1,
	"pkg/runlog":               1,
	"pkg/jobresults":           1,
	"pkg/jobresults/storetest": 1,

	// 2: the outside systems: the API's client and emulator, the
	// destinations, the broker's server and connection, logging.
	"pkg/wsa":                         2,
	"pkg/emulator":                    2,
	"pkg/destination":                 2,
	"pkg/destination/internal/core":   2,
	"pkg/destination/s3dest":          2,
	"pkg/destination/gcsdest":         2,
	"pkg/destination/azuredest":       2,
	"pkg/destination/destinationtest": 2,
	"internal/natsserver":             2,
	"internal/natsserver/natstest":    2,
	"internal/natsconn":               2,
	"internal/logging":                2,

	// 3: the broker topology: streams, consumers, the stage table, the
	// runs and claims buckets.
	"internal/topology": 3,

	// 4: the stage runtime and the two ends of a run outside the stages.
	"internal/stage":    4,
	"internal/feeder":   4,
	"internal/progress": 4,

	// 5: the stages.
	"internal/submitter":    5,
	"internal/poller":       5,
	"internal/writer":       5,
	"internal/statusworker": 5,

	// 6: the stages assembled into processes.
	"internal/local":                       6,
	"internal/worker":                      6,
	"internal/workerspec":                  6,
	"internal/workerspec/submitterspec":    6,
	"internal/workerspec/pollerspec":       6,
	"internal/workerspec/writerspec":       6,
	"internal/workerspec/statusworkerspec": 6,

	// 7: the public entry point.
	"pkg/oxy": 7,

	// 8: the binaries, the CLI and the tests of the whole system.
	"internal/cli":          8,
	"cmd/oxy":               8,
	"cmd/oxybench":          8,
	"cmd/submitter":         8,
	"cmd/poller":            8,
	"cmd/writer":            8,
	"cmd/statusworker":      8,
	"internal/archtest":     8,
	"internal/e2e":          8,
	"internal/pipelinetest": 8,
}

// goPackage is the part of `go list -json` this package reads.
type goPackage struct {
	ImportPath string
	Imports    []string
}

// modulePackages lists the module's packages with their imports, paths
// relative to the module (pkg/oxy, not github.com/oxypipe/oxypipe/pkg/oxy);
// imports outside the module are dropped.
func modulePackages(t *testing.T) []goPackage {
	t.Helper()
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list the module's packages: %v", err)
	}
	var pkgs []goPackage
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p goPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("reading go list's output: %v", err)
		}
		var own []string
		for _, imp := range p.Imports {
			if rel, ok := inModule(imp); ok {
				own = append(own, rel)
			}
		}
		rel, _ := inModule(p.ImportPath)
		pkgs = append(pkgs, goPackage{ImportPath: rel, Imports: own})
	}
	if len(pkgs) == 0 {
		t.Fatal("go list found no package in the module")
	}
	return pkgs
}

// inModule returns path relative to the module, and whether it is in it.
func inModule(path string) (string, bool) {
	rel, ok := strings.CutPrefix(path, module+"/")
	return rel, ok
}

func TestImportFloors(t *testing.T) {
	t.Parallel()
	pkgs := modulePackages(t)
	importedBy := map[string][]string{}
	seen := map[string]bool{}
	for _, p := range pkgs {
		seen[p.ImportPath] = true
		for _, imp := range p.Imports {
			importedBy[imp] = append(importedBy[imp], p.ImportPath)
		}
	}
	for _, p := range pkgs {
		floor, ok := floors[p.ImportPath]
		if !ok {
			by := ""
			if imps := importedBy[p.ImportPath]; len(imps) > 0 {
				by = " (imported by " + strings.Join(imps, ", ") + ")"
			}
			t.Errorf("%s has no floor%s: add it to floors in internal/archtest/floors_test.go and to the floor table of docs/architecture.md, on the lowest floor its imports allow", p.ImportPath, by)
			continue
		}
		for _, imp := range p.Imports {
			impFloor, ok := floors[imp]
			if !ok {
				continue // reported on its own entry
			}
			if impFloor > floor {
				t.Errorf("%s (floor %d) imports %s (floor %d): a package may import only its own floor or lower; move what it needs down to a package of floor %d or lower, or move %s up", p.ImportPath, floor, imp, impFloor, floor, p.ImportPath)
			}
		}
	}
	for path := range floors {
		if !seen[path] {
			t.Errorf("floors names %s, which is not a package of the module: remove it from internal/archtest/floors_test.go and docs/architecture.md", path)
		}
	}
}

// docFloorRow is a row of the floor table of docs/architecture.md: it
// starts with the floor number and names its packages in backquotes in its
// last cell.
var docFloorRow = regexp.MustCompile(`^\|\s*(\d+)\s*\|.*\|([^|]*)\|\s*$`)

var backquoted = regexp.MustCompile("`([^`]+)`")

func TestTheArchitectureDocShowsTheFloors(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	text, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(string(text)))
	for sc.Scan() {
		m := docFloorRow.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		floor, err := strconv.Atoi(m[1])
		if err != nil {
			t.Fatalf("floor %q: %v", m[1], err)
		}
		for _, name := range backquoted.FindAllStringSubmatch(m[2], -1) {
			if prev, dup := doc[name[1]]; dup {
				t.Errorf("docs/architecture.md puts %s on floors %d and %d", name[1], prev, floor)
			}
			doc[name[1]] = floor
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(doc) == 0 {
		t.Fatal("docs/architecture.md has no floor table (rows `| N | … | `pkg/a`, `pkg/b` |`)")
	}
	var diffs []string
	for path, floor := range floors {
		switch got, ok := doc[path]; {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s (floor %d) is missing from the doc", path, floor))
		case got != floor:
			diffs = append(diffs, fmt.Sprintf("%s is on floor %d in the test, %d in the doc", path, floor, got))
		}
	}
	for path, floor := range doc {
		if _, ok := floors[path]; !ok {
			diffs = append(diffs, fmt.Sprintf("the doc puts %s on floor %d, the test has no such package", path, floor))
		}
	}
	slices.Sort(diffs)
	for _, d := range diffs {
		t.Errorf("docs/architecture.md's floor table and internal/archtest's floors differ: %s", d)
	}
}

// moduleRoot returns the directory of the module's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	return strings.TrimSpace(string(out))
}
