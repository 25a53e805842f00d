package main

import (
	"runtime/debug"
	"testing"
)

// TestFallbackRootsLinked checks that the binary carries its own CA roots. The
// container image is FROM scratch, with no /etc/ssl/certs, and the controller
// speaks TLS to AWS; without the fallback bundle every AWS call would fail
// with "x509: certificate signed by unknown authority". The test binary links
// the main package's imports, so its build info lists the bundle's module
// exactly when the command does.
func TestFallbackRootsLinked(t *testing.T) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		t.Fatal("no build info in the test binary")
	}
	for _, dep := range bi.Deps {
		if dep.Path == fallbackRootsModule {
			return
		}
	}
	t.Fatalf("%s is not linked into stevedore: blank-import it in cmd/stevedore so the scratch image can verify AWS endpoints", fallbackRootsModule)
}

const fallbackRootsModule = "golang.org/x/crypto/x509roots/fallback"
