package controllers

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/garbagecollect"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/settings"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// TestProfileCollector: the collector lists the cluster's profiles on its
// first round, again only when the profiles in use change or
// ProfileInterval has passed, and deletes an old role's profile once the
// last NodeClaim launched with it is gone.
func TestProfileCollector(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	f := fake.New(fake.Options{Seed: 1, Clock: clk, InstanceTypes: []string{"m5.large"}})
	const cluster, region = "my-cluster", "us-west-2"
	for _, name := range []string{"old", "new"} {
		if _, err := f.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String(name),
			Path: aws.String("/stevedore/" + region + "/" + cluster + "/uid-1/")}); err != nil {
			t.Fatal(err)
		}
	}
	clk.Step(time.Hour)
	st := state.NewCluster()
	st.UpdateEC2NodeClass(&awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default", UID: "uid-1"}, Status: awsv1.EC2NodeClassStatus{InstanceProfile: "new"}})
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-a", Labels: map[string]string{wellknown.LabelNodePool: "default"},
		Annotations: map[string]string{wellknown.AnnotationInstanceProfileName: "old"}}}
	st.UpdateNodeClaim(claim)
	deps := Deps{Clients: f.Clients(), State: st, Clock: clk, Region: region, Settings: settings.Settings{ClusterName: cluster}}
	lists := func() int { return f.CallCounts()["ListInstanceProfiles"] }
	isolated := deps
	isolated.Settings.IsolatedVPC = true
	var off ProfileCollector
	off.collect(ctx, logr.Discard(), isolated, clk.Now())
	if lists() != 0 {
		t.Fatalf("--isolated-vpc: %d listings, want none", lists())
	}
	var p ProfileCollector
	exists := func(name string) bool {
		_, err := f.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
		return err == nil
	}

	round := func() { p.collect(ctx, logr.Discard(), deps, clk.Now()) }
	round()
	first := lists()
	if first == 0 || !exists("old") || !exists("new") {
		t.Fatalf("first round: %d listings; old kept %v, new kept %v (both are in use)", first, exists("old"), exists("new"))
	}
	clk.Step(garbagecollect.ProfileInterval / 2)
	round()
	if lists() != first {
		t.Fatalf("a round with nothing changed listed the profiles again (%d listings, want %d)", lists(), first)
	}
	st.DeleteNodeClaim(claim.Name)
	round()
	if lists() == first || exists("old") || !exists("new") {
		t.Fatalf("after the last NodeClaim of the old profile went: %d listings; old kept %v, new kept %v", lists(), exists("old"), exists("new"))
	}
	second := lists()
	clk.Step(garbagecollect.ProfileInterval)
	round()
	if lists() == second {
		t.Errorf("no listing after ProfileInterval")
	}
}
