package main

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// writeDoc writes docs/compatibility.md from the results: the summary line,
// the last full run, and one row per spec of the suite in its order. A spec
// with no result yet is counted and shown as not run.
func writeDoc(path string, specs []spec, rs *results) error {
	var passed, failed, na, notRun int
	for _, s := range specs {
		switch rs.Specs[s.Name].State {
		case "passed":
			passed++
		case "failed":
			failed++
		case "not applicable":
			na++
		default:
			notRun++
		}
	}
	var b strings.Builder
	b.WriteString(`# Compatibility: Karpenter's regression suite

Karpenter ships a cloud-agnostic end-to-end suite, package
` + "`test/suites/regression`" + ` of the Go module ` + "`sigs.k8s.io/karpenter`" + `. stevedore
runs it **unchanged**, at ` + "`v1.14.1`" + `, against the real ` + "`stevedore controller`" + ` on the
local cluster (etcd, kube-apiserver, kube-scheduler, kube-controller-manager and
KWOK, as ` + "`hack/local-cluster.sh`" + ` runs them) with a simulated AWS account:

` + "```sh" + `
make karpenter-suite                                   # every spec, three at a time (three clusters)
make karpenter-suite KSUITE_FOCUS='Validation'         # the specs whose text matches
make karpenter-suite KSUITE_PARALLEL=1                 # one spec at a time
` + "```" + `

` + "`hack/karpenter-suite.sh`" + ` builds the suite from the Go module proxy in a module of its
own (` + "`test/karpenter-suite/go.mod`" + `), so no third-party code is copied here and
stevedore's dependencies are untouched. The suite's source is v1.14.1's,
unchanged; its module raises the Kubernetes libraries the suite builds with
(` + "`" + `k8s.io/*` + "`" + ` v0.35 to v0.37.2, controller-runtime v0.23.1 to v0.25.2, and what
they share with stevedore) to the versions stevedore and the local cluster
use, so that a new machine compiles them once rather than twice (six minutes
of a cold ` + "`" + `make test` + "`" + `). The client then matches the v1.37 API server it
talks to. It gives the suite the EC2NodeClass and
NodePool of ` + "`test/karpenter-suite/cluster/`" + ` (` + "`--default-nodeclass`" + `,
` + "`--default-nodepool`" + `), and runs each spec in a process of its own with a time
limit (20 minutes by default: the suite's own waits last up to 17). After a spec
that did not pass, the controller and the cluster are started anew, so that what
it left behind cannot fail the next one. Logs and Ginkgo reports are kept in
` + "`.karpenter-suite/`" + `; each spec's line in the run's output also gives the controller's
resident memory and CPU while it ran. Three at a time, the whole suite takes
about an hour on a 2-core machine. This page is written by the run, from
` + "`test/karpenter-suite/results.json`" + ` (the last run of each spec); a spec is "not
applicable" only when ` + "`test/karpenter-suite/not-applicable.yaml`" + ` says why no local
cluster can run it.

`)
	fmt.Fprintf(&b, "Karpenter v1.14.1 regression suite: %d passed, %d failed, %d not applicable, of %d specs", passed, failed, na, len(specs))
	if notRun > 0 {
		fmt.Fprintf(&b, " (%d not run yet)", notRun)
	}
	b.WriteString("\n\n")
	if fr := rs.FullRun; fr != nil {
		fmt.Fprintf(&b, "Last full run: %s, at commit `%s`, on %s.\n\n", time.Duration(fr.Seconds)*time.Second, fr.Commit, fr.Date)
	} else {
		b.WriteString("No full run is recorded yet: the rows below come from runs of some specs, each with the commit it ran at.\n\n")
	}
	b.WriteString("| Spec | Result | Time | Commit | Why |\n|---|---|---|---|---|\n")
	for _, s := range specs {
		r, ok := rs.Specs[s.Name]
		state, secs, commit, why := "not run", "", "", ""
		if ok {
			state, commit, why = r.State, "`"+r.Commit+"`", strings.TrimSpace(r.Note+" "+r.Reason)
			if r.Seconds > 0 {
				secs = (time.Duration(r.Seconds) * time.Second).String()
			}
		}
		fmt.Fprintf(&b, "| %s (`%s:%d`) | %s | %s | %s | %s |\n", cell(s.Name), s.File, s.Line, state, secs, commit, cell(why))
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// cell makes text fit one cell of a Markdown table.
func cell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.ReplaceAll(s, "|", `\|`)
	if len(s) > 300 {
		s = s[:300] + " …"
	}
	return s
}
