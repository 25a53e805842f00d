package fake

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// The EC2 status checks an instance can fail.
const (
	// StatusCheckInstance is the instance status check: the instance's own
	// software and network configuration (an exhausted memory, a corrupt
	// file system, a kernel that does not boot).
	StatusCheckInstance = "instance"
	// StatusCheckSystem is the system status check: the AWS hardware and
	// network the instance runs on.
	StatusCheckSystem = "system"
)

// ImpairInstanceStatus makes one of the instance's EC2 status checks
// (StatusCheckInstance or StatusCheckSystem) fail from now on, as
// DescribeInstanceStatus then reports it: impaired, with its reachability
// check failed since now. The instance keeps running.
func (f *AWS) ImpairInstanceStatus(id, check string) error {
	if check != StatusCheckInstance && check != StatusCheckSystem {
		return fmt.Errorf("status check %q: use %s or %s", check, StatusCheckInstance, StatusCheckSystem)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.advance()
	inst, ok := f.instances[id]
	if !ok || inst.state != StateRunning {
		return fmt.Errorf("no running instance %s", id)
	}
	if inst.impaired == nil {
		inst.impaired = map[string]time.Time{}
	}
	if _, done := inst.impaired[check]; !done {
		inst.impaired[check] = f.clk.Now()
	}
	return nil
}

// DescribeInstanceStatus implements sdk.EC2. It lists running instances
// (every instance with IncludeAllInstances) in launch order with their
// instance and system status checks: ok, or impaired once
// ImpairInstanceStatus failed them. Scheduled events are not simulated, so
// an event.code filter matches nothing. All matches come in one page.
func (f *AWS) DescribeInstanceStatus(_ context.Context, in *ec2.DescribeInstanceStatusInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstanceStatusOutput, error) {
	const api = "DescribeInstanceStatus"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	if in == nil {
		in = &ec2.DescribeInstanceStatusInput{}
	}
	if err := f.dryRun(api, in.DryRun); err != nil {
		return nil, err
	}
	if err := checkFilters(api, in.Filters, "instance-id", "instance-state-name", "availability-zone",
		"instance-status.status", "instance-status.reachability", "system-status.status", "system-status.reachability", "event.code"); err != nil {
		return nil, err
	}
	if err := checkInstanceIDs(api, in.InstanceIds, func(id string) bool { _, ok := f.instances[id]; return ok }); err != nil {
		return nil, err
	}
	all := in.IncludeAllInstances != nil && *in.IncludeAllInstances
	out := &ec2.DescribeInstanceStatusOutput{InstanceStatuses: []ec2types.InstanceStatus{}}
	for _, inst := range f.orderedInstances() {
		if len(in.InstanceIds) > 0 && !contains(in.InstanceIds, inst.id) {
			continue
		}
		if !all && inst.state != StateRunning {
			continue
		}
		if inst.state == StateTerminated && !inst.goneAt.IsZero() && !f.clk.Now().Before(inst.goneAt) {
			continue
		}
		instSummary, instReach := inst.statusCheck(StatusCheckInstance)
		sysSummary, sysReach := inst.statusCheck(StatusCheckSystem)
		attr := func(n string) []string {
			switch n {
			case "instance-id":
				return one(inst.id)
			case "instance-state-name":
				return one(inst.state)
			case "availability-zone":
				return one(inst.zone)
			case "instance-status.status":
				return one(string(instSummary.Status))
			case "instance-status.reachability":
				return one(string(instReach))
			case "system-status.status":
				return one(string(sysSummary.Status))
			case "system-status.reachability":
				return one(string(sysReach))
			}
			return nil
		}
		if !matchFilters(in.Filters, nil, attr) {
			continue
		}
		out.InstanceStatuses = append(out.InstanceStatuses, ec2types.InstanceStatus{
			InstanceId:       ptr(inst.id),
			AvailabilityZone: ptr(inst.zone),
			InstanceState:    &ec2types.InstanceState{Name: ec2types.InstanceStateName(inst.state), Code: ptr(stateCodes[inst.state])},
			InstanceStatus:   instSummary,
			SystemStatus:     sysSummary,
		})
	}
	return out, nil
}

// statusCheck returns the summary of one of the instance's status checks
// and its reachability.
func (inst *instance) statusCheck(check string) (*ec2types.InstanceStatusSummary, ec2types.StatusType) {
	if inst.state != StateRunning {
		return &ec2types.InstanceStatusSummary{Status: ec2types.SummaryStatusNotApplicable}, ""
	}
	since, bad := inst.impaired[check]
	if !bad {
		return &ec2types.InstanceStatusSummary{Status: ec2types.SummaryStatusOk,
			Details: []ec2types.InstanceStatusDetails{{Name: ec2types.StatusNameReachability, Status: ec2types.StatusTypePassed}}}, ec2types.StatusTypePassed
	}
	return &ec2types.InstanceStatusSummary{Status: ec2types.SummaryStatusImpaired,
		Details: []ec2types.InstanceStatusDetails{{Name: ec2types.StatusNameReachability, Status: ec2types.StatusTypeFailed, ImpairedSince: ptr(since)}}}, ec2types.StatusTypeFailed
}
