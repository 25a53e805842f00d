package garbagecollect

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
)

// TestInstanceProfiles: only the cluster's profiles under the given path
// prefixes that nothing uses and that are older than the grace go, with
// their roles removed first; others' and young ones stay.
func TestInstanceProfiles(t *testing.T) {
	ctx := context.Background()
	prefixes := []string{"/stevedore/us-west-2/my-cluster/", "/karpenter/us-west-2/my-cluster/"}
	for _, tc := range []struct {
		name   string
		path   string
		age    time.Duration
		inUse  bool
		delete bool
	}{
		{"old role, unused", "/stevedore/us-west-2/my-cluster/uid-1/", time.Hour, false, true},
		{"karpenter's, unused", "/karpenter/us-west-2/my-cluster/uid-2/", time.Hour, false, true},
		{"current", "/stevedore/us-west-2/my-cluster/uid-1/", time.Hour, true, false},
		{"just created", "/stevedore/us-west-2/my-cluster/uid-3/", time.Minute, false, false},
		{"another cluster", "/stevedore/us-west-2/my-cluster-2/uid-4/", time.Hour, false, false},
		{"user's own", "/", time.Hour, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			name := "p-" + strings.ReplaceAll(tc.name, " ", "-")
			name = strings.ReplaceAll(strings.ReplaceAll(name, ",", ""), "'", "")
			if _, err := w.aws.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String(name), Path: aws.String(tc.path)}); err != nil {
				t.Fatal(err)
			}
			if _, err := w.aws.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String(name), RoleName: aws.String(w.setup.NodeRole)}); err != nil {
				t.Fatal(err)
			}
			w.clk.Step(tc.age)
			deleted, err := InstanceProfiles(ctx, w.aws, prefixes, func(n string) bool { return tc.inUse && n == name }, w.clk.Now(), ProfileGrace)
			if err != nil {
				t.Fatal(err)
			}
			if got := slices.Contains(deleted, name); got != tc.delete {
				t.Fatalf("deleted %v, want %s deleted: %v", deleted, name, tc.delete)
			}
			_, err = w.aws.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
			var nse *iamtypes.NoSuchEntityException
			if gone := errors.As(err, &nse); gone != tc.delete {
				t.Errorf("after collection GetInstanceProfile: %v, want gone: %v", err, tc.delete)
			}
		})
	}
}

// TestInstanceProfilesPages lists more profiles than one page holds, and
// reports a listing that fails.
func TestInstanceProfilesPages(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	prefix := "/stevedore/us-west-2/my-cluster/"
	var want []string
	for i := range 105 {
		name := "p-" + strings.Repeat("x", i%3) + string(rune('a'+i%26)) + time.Duration(i).String()
		if _, err := w.aws.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String(name), Path: aws.String(prefix + "uid/")}); err != nil {
			t.Fatal(err)
		}
		want = append(want, name)
	}
	slices.Sort(want)
	w.clk.Step(time.Hour)
	deleted, err := InstanceProfiles(ctx, w.aws, []string{prefix}, func(string) bool { return false }, w.clk.Now(), ProfileGrace)
	if err != nil || !slices.Equal(deleted, want) {
		t.Fatalf("deleted %d profiles (%v), want all %d in name order", len(deleted), err, len(want))
	}

	w.aws.InjectError("ListInstanceProfiles", errors.New("boom"), 1)
	if _, err := InstanceProfiles(ctx, w.aws, []string{prefix}, func(string) bool { return false }, w.clk.Now(), ProfileGrace); err == nil || !strings.Contains(err.Error(), "listing the instance profiles") {
		t.Errorf("a failed listing: %v", err)
	}
	if _, err := InstanceProfiles(ctx, w.aws, nil, func(string) bool { return false }, w.clk.Now(), ProfileGrace); err == nil {
		t.Error("no prefixes: no error")
	}
}
