// Command crdfinish finishes the CRD files named on its command line in
// place; see package crdfinish.
package main

import (
	"fmt"
	"os"

	"github.com/stevedore-autoscaler/stevedore/api/crds/crdfinish"
)

func main() {
	for _, path := range os.Args[1:] {
		if err := crdfinish.File(path); err != nil {
			fmt.Fprintln(os.Stderr, "crdfinish:", err)
			os.Exit(1)
		}
	}
}
