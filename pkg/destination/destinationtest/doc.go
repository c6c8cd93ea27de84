// Package destinationtest is the conformance suite every destination
// implementation runs: local folders, S3, Cloud Storage and Azure Blob
// Storage behave the same way because they pass the same tests.
//
// An implementation's test calls Run with a Setup that opens fresh, empty
// locations of its kind (a temporary folder, a new prefix in an in-process
// S3 server's bucket, an emulator's container). A backend that cannot run on
// the machine should t.Skip with the reason before calling Run.
package destinationtest
