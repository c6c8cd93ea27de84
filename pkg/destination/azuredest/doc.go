// Package azuredest stores destination files in an Azure Blob Storage
// container under a blob-name prefix.
//
// It is the implementation behind az:// locations in package destination, in
// its own package so that only programs that open az:// locations link the
// Azure SDK. Credentials come from Config or, when Config names none, from
// the environment: AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_ACCOUNT
// with AZURE_STORAGE_KEY (or AZURE_STORAGE_SAS_TOKEN). AZURE_STORAGE_ENDPOINT
// overrides the service URL, and AZURE_STORAGE_USE_EMULATOR=true selects
// Azurite's development account. Microsoft Entra ID credentials (the Azure
// SDK's DefaultAzureCredential) are not supported: pass a Client built with
// them in Config.Client.
//
// Put sends a body that fits in Config.BlockSize with one Put Blob request,
// and a longer one as staged blocks committed at the end, so memory stays
// bounded. A blob appears only when its Put Blob or its block-list commit
// succeeds; a Put that fails or is cancelled commits nothing (its staged
// blocks are discarded by the service after a week).
package azuredest
