package azuredest_test

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/oxypipe/oxypipe/pkg/destination/azuredest"
	"github.com/oxypipe/oxypipe/pkg/destination/destinationtest"
	"github.com/oxypipe/oxypipe/pkg/destination/internal/core"
)

const containerName = "oxypipe"

func emulatorConfig(serviceURL string) azuredest.Config {
	return azuredest.Config{
		ServiceURL:  serviceURL,
		AccountName: azuredest.EmulatorAccount,
		AccountKey:  azuredest.EmulatorAccountKey,
	}
}

func createContainer(t *testing.T, serviceURL string) {
	t.Helper()
	cred, err := azblob.NewSharedKeyCredential(azuredest.EmulatorAccount, azuredest.EmulatorAccountKey)
	if err != nil {
		t.Fatal(err)
	}
	client, err := azblob.NewClientWithSharedKeyCredential(serviceURL, cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CreateContainer(t.Context(), containerName, nil); err != nil {
		t.Fatalf("creating the container: %v", err)
	}
}

func open(t *testing.T, cfg azuredest.Config, container, prefix string) *azuredest.Store {
	t.Helper()
	s, err := azuredest.New(t.Context(), container, prefix, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

// One Azurite process serves the whole package: it takes a second or two to
// start.
func TestAzurite(t *testing.T) {
	serviceURL := startAzurite(t)
	createContainer(t, serviceURL)
	cfg := emulatorConfig(serviceURL)

	t.Run("conformance", func(t *testing.T) {
		var n atomic.Int64
		destinationtest.Run(t, destinationtest.Setup{
			Open: func(t *testing.T) destinationtest.Destination {
				return open(t, cfg, containerName, fmt.Sprintf("runs/t%d", n.Add(1)))
			},
			OpenMissing: func(t *testing.T) destinationtest.Destination {
				return open(t, cfg, "no-such-container", "results")
			},
			Secrets:        []string{azuredest.EmulatorAccountKey},
			MaxStreamAlloc: 16 << 20,
		})
	})

	t.Run("a wrong account key is ErrAccessDenied and stays out of the error", func(t *testing.T) {
		wrong := cfg
		wrong.AccountKey = "d3Jvbmcta2V5LXdyb25nLWtleS13cm9uZy1rZXktd3Jvbmcta2V5LXdyb25nLWtleQ=="
		err := open(t, wrong, containerName, "").Probe(t.Context())
		if !errors.Is(err, core.ErrAccessDenied) {
			t.Fatalf("Probe = %v, want ErrAccessDenied", err)
		}
		if strings.Contains(err.Error(), wrong.AccountKey) || strings.Contains(err.Error(), "\n") {
			t.Fatalf("error %q leaks the key or spans lines", err)
		}
	})

	t.Run("a connection string from the environment opens the store", func(t *testing.T) {
		conn := "DefaultEndpointsProtocol=http;AccountName=" + azuredest.EmulatorAccount +
			";AccountKey=" + azuredest.EmulatorAccountKey + ";BlobEndpoint=" + serviceURL + ";"
		for _, name := range []string{"AZURE_STORAGE_ENDPOINT", "AZURE_STORAGE_ACCOUNT", "AZURE_STORAGE_ACCOUNT_NAME",
			"AZURE_STORAGE_KEY", "AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_ACCESS_KEY", "AZURE_STORAGE_SAS_TOKEN", "AZURE_STORAGE_USE_EMULATOR"} {
			t.Setenv(name, "")
		}
		t.Setenv("AZURE_STORAGE_CONNECTION_STRING", conn)
		s := open(t, azuredest.Config{}, containerName, "env")
		if err := s.Probe(t.Context()); err != nil {
			t.Fatalf("Probe: %v", err)
		}
		if err := s.Put(t.Context(), "e.json", strings.NewReader("env")); err != nil {
			t.Fatalf("Put: %v", err)
		}
		names, err := open(t, cfg, containerName, "env").List(t.Context(), "")
		if err != nil || len(names) != 1 || names[0] != "e.json" {
			t.Fatalf("List = %q, %v; want [e.json]", names, err)
		}
	})
}

func TestConfigWithoutCredentials(t *testing.T) {
	for _, name := range []string{"AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_ENDPOINT", "AZURE_STORAGE_ACCOUNT_NAME",
		"AZURE_STORAGE_KEY", "AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_ACCESS_KEY", "AZURE_STORAGE_SAS_TOKEN", "AZURE_STORAGE_USE_EMULATOR"} {
		t.Setenv(name, "")
	}
	t.Setenv("AZURE_STORAGE_ACCOUNT", "someaccount")
	_, err := azuredest.New(t.Context(), containerName, "", azuredest.Config{})
	if err == nil || !strings.Contains(err.Error(), "no Azure credentials") {
		t.Fatalf("New = %v, want a missing-credentials error", err)
	}
	var de *core.Error
	if !errors.As(err, &de) || de.Op != "open" || de.Location != "az://oxypipe/" {
		t.Fatalf("New = %#v, want an open error for az://oxypipe/", err)
	}
}
