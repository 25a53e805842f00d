//go:build !linux

package cluster

import "syscall"

func childAttrs(syscall.Signal) *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

func guard([]int) *process { return nil }

func childPID(string) int { return 0 }
