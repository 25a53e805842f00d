//go:build !linux

package moto

import "os/exec"

// dieWithParent does nothing where the kernel cannot tie the server's life
// to the test binary's; Cleanup still stops it.
func dieWithParent(*exec.Cmd) {}
