package moto

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill the server when the test binary dies,
// so that a crashed or killed test leaves no emulator running.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
