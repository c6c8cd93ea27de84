package azuredest

import (
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// Defaults of Config.
const (
	// DefaultBlockSize is the block size of a staged upload, and the size up
	// to which a body goes up in a single Put Blob request.
	DefaultBlockSize = 4 << 20
	// DefaultConcurrency is the number of blocks of one Put in flight.
	DefaultConcurrency = 2
)

// Azurite's development account: public, documented values that only an
// emulator accepts.
const (
	EmulatorAccount    = "devstoreaccount1"
	EmulatorAccountKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
	emulatorServiceURL = "http://127.0.0.1:10000/" + EmulatorAccount
)

// Config configures an Azure Blob store. Credentials set here win over the
// environment; with none set, the environment variables listed in the package
// documentation are read.
type Config struct {
	// Client, when set, is used as is (its service URL and credential) and
	// every other connection field is ignored.
	Client *azblob.Client

	// ServiceURL is the blob service endpoint, such as
	// "https://ACCOUNT.blob.core.windows.net/" or Azurite's
	// "http://127.0.0.1:10000/devstoreaccount1". Default:
	// AZURE_STORAGE_ENDPOINT, else derived from AccountName.
	ServiceURL string

	// AccountName is the storage account. Default: AZURE_STORAGE_ACCOUNT or
	// AZURE_STORAGE_ACCOUNT_NAME.
	AccountName string

	// AccountKey is the account's shared key. Default: AZURE_STORAGE_KEY,
	// AZURE_STORAGE_ACCOUNT_KEY or AZURE_STORAGE_ACCESS_KEY.
	AccountKey string

	// ConnectionString is a full connection string; it names the account,
	// the endpoint and the credential at once. Default:
	// AZURE_STORAGE_CONNECTION_STRING.
	ConnectionString string

	// SASToken is a shared access signature (with or without a leading "?")
	// granting list, read and write on the container. Default:
	// AZURE_STORAGE_SAS_TOKEN.
	SASToken string

	// UseEmulator selects Azurite's development account and its default
	// endpoint (unless ServiceURL is set). Default: AZURE_STORAGE_USE_EMULATOR.
	UseEmulator bool

	// ClientOptions tune the SDK's pipeline (retries, transport).
	ClientOptions *container.ClientOptions

	// BlockSize is the block size of a staged upload, and the largest body
	// sent in one request, in bytes. Default DefaultBlockSize, at least 1 MiB.
	// Memory per Put is about (Concurrency+1) × BlockSize for long bodies.
	BlockSize int64

	// Concurrency is the number of blocks of one Put staged at once. Default
	// DefaultConcurrency.
	Concurrency int
}

func (c Config) withDefaults() Config {
	if c.BlockSize == 0 {
		c.BlockSize = DefaultBlockSize
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	return c
}

func (c Config) validate() error {
	if c.BlockSize < 1<<20 {
		return fmt.Errorf("azure block size %d is below 1 MiB", c.BlockSize)
	}
	if c.Concurrency < 1 {
		return fmt.Errorf("azure concurrency %d is below 1", c.Concurrency)
	}
	return nil
}

// withEnvironment fills what Config leaves empty from the environment.
// Credentials come from one source only: the config's when it names any.
func (c Config) withEnvironment() (Config, error) {
	if c.ServiceURL == "" {
		c.ServiceURL = os.Getenv("AZURE_STORAGE_ENDPOINT")
	}
	if c.AccountName == "" {
		c.AccountName = firstEnv("AZURE_STORAGE_ACCOUNT", "AZURE_STORAGE_ACCOUNT_NAME")
	}
	if c.ConnectionString != "" || c.AccountKey != "" || c.SASToken != "" || c.UseEmulator {
		return c, nil
	}
	if v := os.Getenv("AZURE_STORAGE_USE_EMULATOR"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return c, fmt.Errorf("AZURE_STORAGE_USE_EMULATOR is not a boolean")
		}
		c.UseEmulator = b
	}
	c.ConnectionString = os.Getenv("AZURE_STORAGE_CONNECTION_STRING")
	c.AccountKey = firstEnv("AZURE_STORAGE_KEY", "AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_ACCESS_KEY")
	c.SASToken = os.Getenv("AZURE_STORAGE_SAS_TOKEN")
	return c, nil
}

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

// containerClient builds the client of one container from the resolved
// config.
func (c Config) containerClient(name string) (*container.Client, error) {
	if c.Client != nil {
		return c.Client.ServiceClient().NewContainerClient(name), nil
	}
	c, err := c.withEnvironment()
	if err != nil {
		return nil, err
	}
	if c.UseEmulator {
		if c.AccountName == "" {
			c.AccountName = EmulatorAccount
		}
		if c.AccountKey == "" && c.ConnectionString == "" && c.SASToken == "" {
			c.AccountKey = EmulatorAccountKey
		}
		if c.ServiceURL == "" {
			c.ServiceURL = emulatorServiceURL
		}
	}
	if c.ConnectionString != "" {
		client, err := container.NewClientFromConnectionString(c.ConnectionString, name, c.ClientOptions)
		if err != nil {
			// The SDK's message may quote the string, which holds the key.
			return nil, fmt.Errorf("azure connection string is malformed")
		}
		return client, nil
	}
	if c.ServiceURL == "" {
		if c.AccountName == "" {
			return nil, fmt.Errorf("no Azure storage account: set AZURE_STORAGE_ACCOUNT (or AZURE_STORAGE_CONNECTION_STRING)")
		}
		c.ServiceURL = "https://" + c.AccountName + ".blob.core.windows.net/"
	}
	containerURL := strings.TrimSuffix(c.ServiceURL, "/") + "/" + url.PathEscape(name)
	switch {
	case c.AccountKey != "":
		if c.AccountName == "" {
			return nil, fmt.Errorf("an Azure account key needs AZURE_STORAGE_ACCOUNT")
		}
		cred, err := container.NewSharedKeyCredential(c.AccountName, c.AccountKey)
		if err != nil {
			return nil, fmt.Errorf("azure account key is malformed")
		}
		return container.NewClientWithSharedKeyCredential(containerURL, cred, c.ClientOptions)
	case c.SASToken != "":
		return container.NewClientWithNoCredential(containerURL+"?"+strings.TrimPrefix(c.SASToken, "?"), c.ClientOptions)
	default:
		return nil, fmt.Errorf("no Azure credentials: set AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN")
	}
}
