package archtest

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// storageSDKs are the module path prefixes of the object-store SDKs and of
// the MongoDB driver. Only a binary that writes results, run logs or the
// ledger needs them; any other binary that links one got it through an
// import it does not need (a vocabulary type living beside a destination,
// say), and grows by tens of megabytes and by those SDKs' init work.
var storageSDKs = []string{
	"github.com/aws/aws-sdk-go-v2/service/s3",
	"cloud.google.com/go/storage",
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob",
	"go.mongodb.org/mongo-driver",
}

// writers are the binaries that write to a destination or to the ledger: the
// writer (results), the statusworker (the ledger and run logs), the CLI (all
// of it in one process) and the benchmark (which runs the pipeline).
var writers = []string{"writer", "statusworker", "oxy", "oxybench"}

const module = "github.com/oxypipe/oxypipe"

func TestOnlyWritersLinkStorageSDKs(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}", module+"/cmd/...").Output()
	if err != nil {
		t.Fatalf("go list the binaries: %v", err)
	}
	cmds := strings.Fields(string(out))
	if len(cmds) == 0 {
		t.Fatal("go list found no binary under cmd/")
	}
	checked := 0
	for _, cmd := range cmds {
		name := cmd[strings.LastIndex(cmd, "/")+1:]
		if slices.Contains(writers, name) {
			continue
		}
		checked++
		deps, err := exec.Command("go", "list", "-deps", cmd).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", cmd, err)
		}
		for _, sdk := range storageSDKs {
			if dep, ok := linked(strings.Fields(string(deps)), sdk); ok {
				t.Errorf("cmd/%s links %s, but only %v may link a storage SDK: find the import that pulls it in (go list -deps) and move what it needs to a package without it", name, dep, writers)
			}
		}
	}
	if checked == 0 {
		t.Fatal("every binary is a writer: the test checked nothing")
	}
}

// linked returns the first of deps that is the module path sdk or a package
// under it.
func linked(deps []string, sdk string) (string, bool) {
	for _, dep := range deps {
		if dep == sdk || strings.HasPrefix(dep, sdk+"/") {
			return dep, true
		}
	}
	return "", false
}
