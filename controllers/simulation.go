package controllers

import (
	"context"

	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/garbagecollect"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/interruption/queue"
	disruptionctl "github.com/stevedore-autoscaler/stevedore/controllers/disruption"
	"github.com/stevedore-autoscaler/stevedore/controllers/metrics"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// The functions in this file hand the parts Register runs as loops (the
// leaked-instance collector, the interruption-queue poller) to a caller that
// drives them itself: the simulator calls them on its virtual clock instead
// of letting tickers and long polls run in goroutines. They add no
// behaviour of their own.

// InterruptionHandler returns the function the interruption-queue consumer
// hands each action to, built as Register builds it. disruption may be nil
// (interrupted NodeClaims are then only deleted).
func InterruptionHandler(kube client.Client, rec events.EventRecorder, cloud *aws.Provider, disruption *disruptionctl.Controller, m *metrics.Metrics, actOnRebalance bool, clk clock.PassiveClock) func(context.Context, queue.Action) error {
	h := &interruptionHandler{kube: kube, rec: rec, cloud: cloud, metrics: m, actOnRebalance: actOnRebalance, clock: clk}
	if disruption != nil {
		h.disruption = disruption
	}
	return h.handle
}

// NodeClaimForInstance returns the function the interruption-queue consumer
// finds an instance's NodeClaim with.
func NodeClaimForInstance(st *state.Cluster, clk clock.PassiveClock) func(instanceID string) (string, bool) {
	return nodeClaimFor(st, clk)
}

// CollectLeakedInstances runs one round of the leaked-instance collector that
// Register runs every deps.GCInterval, the deletion of unused launch
// templates through deps.Cloud when it is set, and of unused instance
// profiles through deps.Profiles when it is set. It uses deps.Clients.EC2,
// deps.Settings.ClusterName, deps.State, deps.Clock and deps.GCGrace
// (default garbagecollect.DefaultGrace).
func CollectLeakedInstances(ctx context.Context, reader client.Reader, deps Deps) {
	if deps.Clock == nil {
		deps.Clock = clock.RealClock{}
	}
	if deps.GCGrace <= 0 {
		deps.GCGrace = garbagecollect.DefaultGrace
	}
	collectOnce(ctx, log.FromContext(ctx).WithName(NameGarbageCollection), reader, deps)
}
