// Package archtest holds tests of the repository's structure: rules about
// which package may link what, which the compiler cannot enforce.
package archtest
