package main

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	ctrlleaderelection "sigs.k8s.io/controller-runtime/pkg/leaderelection"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/stevedore-autoscaler/stevedore/internal/kubemetrics"
)

// leaderRenewDeadline is controller-runtime's default renew deadline; the
// lock's client times out at half of it, as the manager's own lock does.
const leaderRenewDeadline = 10 * time.Second

// leaderLock is the Lease lock of leader election, made as the manager
// makes its own (the identity is the host name and a UUID, events of
// leadership are recorded on the Lease under that identity), with every
// renewal that takes client-go's slow path counted in
// leader_election_slowpath_total. The returned function stops the lock's
// event recording; call it after the manager has stopped.
func (o *controllerOptions) leaderLock(cfg *rest.Config, scheme *runtime.Scheme, reg prometheus.Registerer) (resourcelock.Interface, func(), error) {
	slowpath, err := kubemetrics.SlowpathCounter(reg)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", kubemetrics.NameSlowpathTotal, err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	lock, err := ctrlleaderelection.NewResourceLock(rest.CopyConfig(cfg), leaseEvents{broadcaster: broadcaster, scheme: scheme}, ctrlleaderelection.Options{
		LeaderElection:             true,
		LeaderElectionResourceLock: resourcelock.LeasesResourceLock,
		LeaderElectionNamespace:    o.leaderElectionNS,
		LeaderElectionID:           o.leaseName(),
		RenewDeadline:              leaderRenewDeadline,
	})
	if err != nil {
		broadcaster.Shutdown()
		return nil, nil, err
	}
	return kubemetrics.CountSlowpath(lock, o.leaseName(), slowpath), broadcaster.Shutdown, nil
}

// leaseEvents gives the Lease lock its recorder of the core/v1 events API,
// as client-go's lock records them. The lock asks for no other recorder.
type leaseEvents struct {
	recorder.Provider
	broadcaster record.EventBroadcaster
	scheme      *runtime.Scheme
}

func (p leaseEvents) GetEventRecorderFor(name string) record.EventRecorder {
	return p.broadcaster.NewRecorder(p.scheme, corev1.EventSource{Component: name})
}
