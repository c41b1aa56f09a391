package rtl

import "syscall"

const (
	sigXCPU = syscall.SIGXCPU
	sigXFSZ = syscall.SIGXFSZ
)
