//go:build !crashpoints

package main

// installCrashPoints is a no-op outside test builds (see crashpoints_on.go).
func installCrashPoints() {}
