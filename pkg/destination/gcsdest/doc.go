// Package gcsdest stores destination files in a Google Cloud Storage bucket
// under an object-name prefix.
//
// It is the implementation behind gs:// locations in package destination, in
// its own package so that only programs that open gs:// locations link the
// Cloud Storage SDK. Credentials come from Application Default Credentials
// (GOOGLE_APPLICATION_CREDENTIALS, the gcloud login, the metadata server), and
// STORAGE_EMULATOR_HOST points the client at an emulator, as in every Google
// client library.
//
// Put sends a body that fits in Config.ChunkSize in one request and a longer
// one as a resumable upload in chunks of that size, so memory stays bounded.
// Cloud Storage makes an object visible only when its upload is finalized; a
// Put that fails or is cancelled abandons the upload instead of finalizing a
// partial object.
package gcsdest
