package main

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// parseEnv reads the controller's options from env alone, as the pod does.
func parseEnv(t *testing.T, env map[string]string) *controllerOptions {
	t.Helper()
	o := &controllerOptions{}
	fs := pflag.NewFlagSet("env", pflag.ContinueOnError)
	o.addFlags(fs, func(k string) string { return env[k] })
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	return o
}

// TestKarpenterEnvVars: the environment Karpenter's chart and docs set
// means the same to stevedore.
func TestKarpenterEnvVars(t *testing.T) {
	type effective struct {
		metrics, probe, lease, preference, minValues, logOut, logErr string
		leaderElect                                                  bool
		memoryLimit                                                  int64
		profiling                                                    bool
		noClusterStateMetrics                                        bool
	}
	defaults := effective{metrics: ":8080", probe: ":8081", lease: "karpenter-leader-election", preference: "Respect",
		minValues: "Strict", logOut: "stdout", logErr: "stderr", leaderElect: true, memoryLimit: -1}
	tests := []struct {
		name string
		env  map[string]string
		want func(*effective)
	}{
		{name: "defaults", env: nil, want: func(*effective) {}},
		{name: "ports", env: map[string]string{"METRICS_PORT": "8000", "HEALTH_PROBE_PORT": "9081"},
			want: func(e *effective) { e.metrics, e.probe = ":8000", ":9081" }},
		{name: "bind addresses win over ports", env: map[string]string{"METRICS_PORT": "8000", "METRICS_BIND_ADDRESS": "127.0.0.1:7000", "HEALTH_PROBE_BIND_ADDRESS": ":7001"},
			want: func(e *effective) { e.metrics, e.probe = "127.0.0.1:7000", ":7001" }},
		{name: "leader election off", env: map[string]string{"DISABLE_LEADER_ELECTION": "true"},
			want: func(e *effective) { e.leaderElect = false }},
		{name: "lease name", env: map[string]string{"LEADER_ELECTION_NAME": "karpenter-leader-election", "LEADER_ELECTION_ID": "other"},
			want: func(e *effective) { e.lease = "karpenter-leader-election" }},
		{name: "policies", env: map[string]string{"PREFERENCE_POLICY": "Ignore", "MIN_VALUES_POLICY": "BestEffort"},
			want: func(e *effective) { e.preference, e.minValues = "Ignore", "BestEffort" }},
		{name: "logs", env: map[string]string{"LOG_OUTPUT_PATHS": "stderr,/var/log/stevedore.log", "LOG_ERROR_OUTPUT_PATHS": "stdout"},
			want: func(e *effective) { e.logOut, e.logErr = "stderr,/var/log/stevedore.log", "stdout" }},
		{name: "memory and profiling", env: map[string]string{"MEMORY_LIMIT": "1073741824", "ENABLE_PROFILING": "true"},
			want: func(e *effective) { e.memoryLimit, e.profiling = 1073741824, true }},
		{name: "cluster state observability off", env: map[string]string{"DISABLE_CLUSTER_STATE_OBSERVABILITY": "true"},
			want: func(e *effective) { e.noClusterStateMetrics = true }},
		{name: "accepted and ignored", env: map[string]string{"CPU_REQUESTS": "2000", "IGNORE_DRA_REQUESTS": "true",
			"KARPENTER_SERVICE": "karpenter", "DISABLE_WEBHOOK": "true",
			"WEBHOOK_PORT": "8443", "WEBHOOK_METRICS_PORT": "8001", "AWS_FEATURE_GATES": "NodeClassCEL=false"},
			want: func(*effective) {}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := parseEnv(t, tc.env)
			if o.envErr != nil {
				t.Fatalf("env error: %v", o.envErr)
			}
			want := defaults
			tc.want(&want)
			got := effective{metrics: o.metricsBindAddress(), probe: o.probeBindAddress(), lease: o.leaseName(),
				preference: o.preferencePolicy, minValues: o.minValuesPolicy, logOut: o.logOutputPaths, logErr: o.logErrorPaths,
				leaderElect: o.leaderElection(), memoryLimit: o.memoryLimit, profiling: o.enableProfiling,
				noClusterStateMetrics: o.disableObservability}
			if got != want {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
			o.settings.ClusterName = "c"
			if err := o.validate(); err != nil {
				t.Errorf("validate: %v", err)
			}
		})
	}
}

// TestKarpenterEnvVarsInvalid: a malformed Karpenter setting is reported
// with its variable, and a bad value with the flag and the fix.
func TestKarpenterEnvVarsInvalid(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"METRICS_PORT": "http"}, "METRICS_PORT"},
		{map[string]string{"DISABLE_LEADER_ELECTION": "maybe"}, "DISABLE_LEADER_ELECTION"},
		{map[string]string{"MEMORY_LIMIT": "1Gi"}, "MEMORY_LIMIT"},
		{map[string]string{"MIN_VALUES_POLICY": "Loose"}, `--min-values-policy "Loose"`},
		{map[string]string{"HEALTH_PROBE_PORT": "70000"}, "--health-probe-port 70000"},
		{map[string]string{"LOG_OUTPUT_PATHS": " , "}, "--log-output-paths must name"},
		{map[string]string{"AWS_FEATURE_GATES": "NodeClassCEL=true"}, "--aws-feature-gates: NodeClassCEL=true: stevedore does not implement"},
		{map[string]string{"IGNORE_DRA_REQUESTS": "false"}, "--ignore-dra-requests=false: stevedore does not schedule DRA resource claims"},
	} {
		o := parseEnv(t, tc.env)
		o.settings.ClusterName = "c"
		err := o.validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.env, err, tc.want)
		}
	}
}

// TestKarpenterDefaultFeatureGates: Karpenter's default FEATURE_GATES, and
// each of its gates at its default, are accepted. (Turning on a gate
// stevedore does not implement is refused, and NodeOverlay=true accepted:
// TestParseFeatureGates.)
func TestKarpenterDefaultFeatureGates(t *testing.T) {
	const upstream = "NodeRepair=false,ReservedCapacity=true,SpotToSpotConsolidation=false,NodeOverlay=false,StaticCapacity=false,CapacityBuffer=false"
	if defaultFeatureGates != upstream {
		t.Errorf("default --feature-gates = %q, want Karpenter's %q", defaultFeatureGates, upstream)
	}
	for _, v := range []string{upstream, "NodeOverlay=false", "CapacityBuffer=false"} {
		if _, err := parseFeatureGates(v); err != nil {
			t.Errorf("%s: %v", v, err)
		}
	}
}

func TestSoftMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		limit  int64
		gomem  bool
		want   int64
		wantOK bool
	}{
		{limit: -1},
		{limit: 0},
		{limit: 1 << 30, want: 966367641, wantOK: true},
		{limit: 1 << 30, gomem: true},
	} {
		got, ok := softMemoryLimit(tc.limit, tc.gomem)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("softMemoryLimit(%d, %v) = %d, %v; want %d, %v", tc.limit, tc.gomem, got, ok, tc.want, tc.wantOK)
		}
	}
}

// Profiles are served on loopback, on a listener of their own, and only when
// asked for; never on the metrics address.
func TestProfilingListensOnLoopbackOnly(t *testing.T) {
	for _, on := range []bool{false, true} {
		o := &controllerOptions{enableProfiling: on}
		got := o.profilingBindAddress()
		switch {
		case !on && got != "0":
			t.Errorf("profiling off: pprof address %q, want 0 (none)", got)
		case on && (got != ProfilingBindAddress || !strings.HasPrefix(got, "127.0.0.1:")):
			t.Errorf("profiling on: pprof address %q, want %s on loopback", got, ProfilingBindAddress)
		case on && got == o.metricsBindAddress():
			t.Errorf("profiles share the metrics address %s", got)
		}
	}
}
