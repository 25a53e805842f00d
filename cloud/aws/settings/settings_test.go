package settings

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestAddFlags(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		want    func(*Settings)
		wantErr string
	}{
		{name: "defaults", want: func(*Settings) {}},
		{name: "environment", env: map[string]string{
			"CLUSTER_NAME": "prod", "INTERRUPTION_QUEUE": "prod-q", "ISOLATED_VPC": "true",
			"VM_MEMORY_OVERHEAD_PERCENT": "0.06", "RESERVED_ENIS": "1", "AMI_REFRESH_INTERVAL": "5m",
			"ASSUME_ROLE_ARN": "arn:aws:iam::1:role/x",
		}, want: func(s *Settings) {
			s.ClusterName, s.InterruptionQueue, s.IsolatedVPC = "prod", "prod-q", true
			s.VMMemoryOverheadPercent, s.ReservedENIs, s.AMIRefreshInterval = 0.06, 1, 5*time.Minute
			s.AssumeRoleARN = "arn:aws:iam::1:role/x"
		}},
		{name: "flag beats environment", env: map[string]string{"CLUSTER_NAME": "env"}, args: []string{"--cluster-name=flag", "--reserved-enis=2", "--disable-dry-run"},
			want: func(s *Settings) { s.ClusterName, s.ReservedENIs, s.DisableDryRun = "flag", 2, true }},
		{name: "bad environment", env: map[string]string{"ISOLATED_VPC": "maybe", "RESERVED_ENIS": "one", "VM_MEMORY_OVERHEAD_PERCENT": "7.5%", "AMI_REFRESH_INTERVAL": "often"},
			wantErr: "ISOLATED_VPC=\"maybe\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Default()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			err := s.AddFlags(fs, env(tt.env))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tt.wantErr)
				}
				if n := strings.Count(err.Error(), "\n") + 1; n != 4 {
					t.Errorf("got %d errors, want 4: %v", n, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			want := Default()
			tt.want(&want)
			if s != want {
				t.Errorf("settings =\n%+v\nwant\n%+v", s, want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	valid := func() Settings { s := Default(); s.ClusterName = "prod"; return s }
	tests := []struct {
		name   string
		mutate func(*Settings)
		want   string
	}{
		{"valid", func(*Settings) {}, ""},
		{"no cluster name", func(s *Settings) { s.ClusterName = "" }, "--cluster-name (CLUSTER_NAME) is required"},
		{"relative endpoint", func(s *Settings) { s.ClusterEndpoint = "eks.local" }, "absolute URL"},
		{"queue ARN", func(s *Settings) { s.InterruptionQueue = "arn:aws:sqs:us-east-1:1:prod" }, "queue's name, not its ARN"},
		{"queue URL", func(s *Settings) { s.InterruptionQueue = "https://sqs.us-east-1.amazonaws.com/1/prod" }, "queue's name"},
		{"overhead as percent", func(s *Settings) { s.VMMemoryOverheadPercent = 7.5 }, "fraction in [0, 1)"},
		{"negative ENIs", func(s *Settings) { s.ReservedENIs = -1 }, "must not be negative"},
		{"fast AMI refresh", func(s *Settings) { s.AMIRefreshInterval = time.Second }, "at least 1m0s"},
		{"fast subnet refresh", func(s *Settings) { s.SubnetRefreshInterval = 0 }, "--subnet-refresh-interval"},
		{"role not ARN", func(s *Settings) { s.AssumeRoleARN = "stevedore" }, "role ARN"},
		{"short session", func(s *Settings) { s.AssumeRoleDuration = time.Minute }, "at least 15m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := valid()
			tt.mutate(&s)
			err := s.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

func TestEnvVar(t *testing.T) {
	for flag, want := range map[string]string{FlagClusterName: "CLUSTER_NAME", FlagVMMemoryOverheadPercent: "VM_MEMORY_OVERHEAD_PERCENT", FlagAssumeRoleARN: "ASSUME_ROLE_ARN"} {
		if got := EnvVar(flag); got != want {
			t.Errorf("EnvVar(%s) = %s, want %s", flag, got, want)
		}
	}
}
