package metrics

import (
	"context"
	"slices"
	"sync"
	"time"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
)

// Values of the error label of karpenter_cloudprovider_errors_total,
// Karpenter's.
const (
	ErrorNodeClaimNotFound    = "NodeClaimNotFoundError"
	ErrorNodeClassNotReady    = "NodeClassNotReadyError"
	ErrorInsufficientCapacity = "InsufficientCapacityError"
	ErrorUnknown              = "unknown"
)

// Names of the batcher label, after the EC2 calls Karpenter batches.
// stevedore sends each of them alone: every batch has one request and no
// batching window.
const (
	BatcherCreateFleet        = "create_fleet"
	BatcherTerminateInstances = "terminate_instances"
	BatcherDescribeInstances  = "describe_instances"
)

// offerings is the last view of the instance types the provider returned,
// for the instance-type gauges and the NodePool cost.
type offerings struct {
	mu    sync.Mutex
	types map[string]*packer.InstanceType
}

// Decorate returns cp with every call measured under controller: duration,
// errors and batches, the instance types and offerings it returns, and the
// instances that fail to terminate. A nil m returns cp.
func (m *Metrics) Decorate(cp cloud.CloudProvider, controller string) cloud.CloudProvider {
	if m == nil || cp == nil {
		return cp
	}
	return &decorated{CloudProvider: cp, m: m, controller: controller}
}

type decorated struct {
	cloud.CloudProvider
	m          *Metrics
	controller string
}

// measure returns the function that records the call of method that
// started now, with its error.
func (d *decorated) measure(method string) func(error) {
	start := time.Now()
	return func(err error) {
		l := &d.m.lifecycle
		provider := d.CloudProvider.Name()
		l.cloudDuration.WithLabelValues(d.controller, method, provider).Observe(time.Since(start).Seconds())
		if err != nil {
			l.cloudErrors.WithLabelValues(d.controller, method, provider, errorLabel(err)).Inc()
		}
	}
}

func errorLabel(err error) string {
	switch {
	case cloud.IsNodeClaimNotFoundError(err):
		return ErrorNodeClaimNotFound
	case cloud.IsNodeClassNotReadyError(err):
		return ErrorNodeClassNotReady
	case cloud.IsInsufficientCapacityError(err):
		return ErrorInsufficientCapacity
	}
	return ErrorUnknown
}

func (d *decorated) batch(batcher string) {
	d.m.lifecycle.batchSize.WithLabelValues(batcher).Observe(1)
	d.m.lifecycle.batchTime.WithLabelValues(batcher).Observe(0)
}

func (d *decorated) Create(ctx context.Context, nc *karpv1.NodeClaim) (out *karpv1.NodeClaim, err error) {
	done := d.measure("Create")
	d.batch(BatcherCreateFleet)
	out, err = d.CloudProvider.Create(ctx, nc)
	done(err)
	return out, err
}

func (d *decorated) Delete(ctx context.Context, nc *karpv1.NodeClaim) (err error) {
	done := d.measure("Delete")
	d.batch(BatcherTerminateInstances)
	err = d.CloudProvider.Delete(ctx, nc)
	done(err)
	if err != nil && !cloud.IsNodeClaimNotFoundError(err) {
		d.m.lifecycle.terminationFailures.WithLabelValues(nc.Labels[wellknown.LabelTopologyZone], nc.Labels[wellknown.LabelTopologyZoneID]).Inc()
	}
	return err
}

func (d *decorated) Get(ctx context.Context, providerID string) (out *karpv1.NodeClaim, err error) {
	done := d.measure("Get")
	d.batch(BatcherDescribeInstances)
	out, err = d.CloudProvider.Get(ctx, providerID)
	done(err)
	return out, err
}

func (d *decorated) List(ctx context.Context) (out []*karpv1.NodeClaim, err error) {
	done := d.measure("List")
	out, err = d.CloudProvider.List(ctx)
	done(err)
	return out, err
}

func (d *decorated) GetInstanceTypes(ctx context.Context, np *karpv1.NodePool) (out []*packer.InstanceType, err error) {
	done := d.measure("GetInstanceTypes")
	out, err = d.CloudProvider.GetInstanceTypes(ctx, np)
	done(err)
	if err == nil {
		d.m.offerings.record(out)
	}
	return out, err
}

func (d *decorated) IsDrifted(ctx context.Context, nc *karpv1.NodeClaim) (out cloud.DriftReason, err error) {
	done := d.measure("IsDrifted")
	out, err = d.CloudProvider.IsDrifted(ctx, nc)
	done(err)
	return out, err
}

// record remembers the instance types; a type seen again replaces the one
// seen before.
func (o *offerings) record(types []*packer.InstanceType) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, it := range types {
		o.types[it.Name] = it
	}
}

// sorted returns the instance types by name.
func (o *offerings) sorted() []*packer.InstanceType {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]*packer.InstanceType, 0, len(o.types))
	for _, it := range o.types {
		out = append(out, it)
	}
	slices.SortFunc(out, func(a, b *packer.InstanceType) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

// price returns the hourly price of the offering, and whether it is known.
func (o *offerings) price(instanceType, capacityType, zone string) (float64, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	it, ok := o.types[instanceType]
	if !ok {
		return 0, false
	}
	for _, of := range it.Offerings {
		if of.Zone == zone && of.CapacityType == capacityType {
			return of.PricePerHour, true
		}
	}
	return 0, false
}
