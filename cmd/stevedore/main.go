// Command stevedore is the stevedore node autoscaler and its tools in one binary.
// Each subcommand lives in its own file; the controllers, the simulator and the
// read-only tools are added as their parts land.
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := newRootCommand(os.Stdin, os.Stdout, os.Stderr).Execute(); err != nil {
		// A command that has already reported its findings (validate with
		// problems) returns errSilentFailure to get exit status 1 without a
		// second message.
		if err != errSilentFailure {
			fmt.Fprintln(os.Stderr, "stevedore:", err)
		}
		os.Exit(1)
	}
}
