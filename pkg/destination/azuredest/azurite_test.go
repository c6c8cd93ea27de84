package azuredest_test

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// azuriteInstall is how the skip message tells a developer to get Azurite.
const azuriteInstall = "install it with `npm install --prefix .cache/azurite azurite@3.35.0` at the repository root, put azurite-blob on PATH, or set OXYPIPE_AZURITE to its path"

// findAzurite looks for the azurite-blob executable: $OXYPIPE_AZURITE (the
// executable, or a folder holding it or node_modules/.bin/azurite-blob),
// then PATH, then node_modules/.bin under the repository's .cache folder
// (.cache/node_modules or .cache/*/node_modules). Setting OXYPIPE_AZURITE
// makes the suite mandatory: a CI run cannot skip it by accident.
func findAzurite() (string, bool) {
	var candidates []string
	if env := os.Getenv("OXYPIPE_AZURITE"); env != "" {
		candidates = append(candidates, env,
			filepath.Join(env, "azurite-blob"),
			filepath.Join(env, "node_modules", ".bin", "azurite-blob"))
	}
	if p, err := exec.LookPath("azurite-blob"); err == nil {
		candidates = append(candidates, p)
	}
	if root, ok := repoRoot(); ok {
		candidates = append(candidates, filepath.Join(root, ".cache", "node_modules", ".bin", "azurite-blob"))
		more, _ := filepath.Glob(filepath.Join(root, ".cache", "*", "node_modules", ".bin", "azurite-blob")) // the pattern is valid
		candidates = append(candidates, more...)
	}
	for _, c := range candidates {
		if info, err := os.Stat(c); err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0 {
			return c, true
		}
	}
	return "", false
}

// repoRoot is the nearest folder above the working directory holding go.mod.
func repoRoot() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

var listening = regexp.MustCompile(`listens on (http://\S+)`)

// startAzurite runs azurite-blob on a free port with its data in a temporary
// folder, waits until it answers, and returns the development account's
// service URL. It skips the test when Azurite is not installed.
func startAzurite(t testing.TB) string {
	t.Helper()
	bin, ok := findAzurite()
	if !ok && os.Getenv("OXYPIPE_AZURITE") != "" {
		t.Fatal("OXYPIPE_AZURITE is set but holds no azurite-blob executable; " + azuriteInstall)
	}
	if !ok {
		t.Skip("Azure suite skipped: azurite-blob not found; " + azuriteInstall)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin,
		"--blobHost", "127.0.0.1", "--blobPort", "0", "--location", dir,
		"--skipApiVersionCheck", "--disableTelemetry", "--silent")
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("starting %s: %v", bin, err)
	}
	exited := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-exited
	})

	urls := make(chan string, 1)
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
		_ = cmd.Wait() // killed by cancel at cleanup; its exit status says nothing
	}()

	var base string
	select {
	case base = <-urls:
	case <-exited:
		t.Fatalf("%s exited before listening", bin)
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not report its port within 60s", bin)
	}
	serviceURL := strings.TrimSuffix(base, "/") + "/devstoreaccount1"
	waitUntilServing(t, serviceURL)
	return serviceURL
}

// waitUntilServing polls the service until it answers HTTP at all.
func waitUntilServing(t testing.TB, serviceURL string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	client := &http.Client{Timeout: time.Second}
	for {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, serviceURL+"?comp=list", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			return
		}
		if time.Now().After(deadline) || errors.Is(err, context.Canceled) {
			t.Fatalf("Azurite at %s never answered: %v", serviceURL, err)
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		}
	}
}
