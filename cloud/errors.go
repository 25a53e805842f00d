package cloud

import (
	"errors"
	"fmt"
)

// InsufficientCapacityError means that none of the offerings a launch could
// use had capacity. The caller should delete the NodeClaim and simulate
// again: the offerings that failed are by then marked unavailable, which is
// how a spot launch falls back to on-demand, or to another zone or type.
type InsufficientCapacityError struct {
	Err error
}

// NewInsufficientCapacityError wraps err as an InsufficientCapacityError.
func NewInsufficientCapacityError(err error) *InsufficientCapacityError {
	return &InsufficientCapacityError{Err: err}
}

func (e *InsufficientCapacityError) Error() string {
	return "insufficient capacity: " + errString(e.Err)
}

func (e *InsufficientCapacityError) Unwrap() error { return e.Err }

// IsInsufficientCapacityError reports whether err is, or wraps, an
// InsufficientCapacityError.
func IsInsufficientCapacityError(err error) bool {
	var target *InsufficientCapacityError
	return errors.As(err, &target)
}

// NodeClassNotReadyError means that the NodeClaim's node class exists but is
// not ready for launches (its selectors resolved nothing, or a validation
// failed, or its status is older than its spec).
type NodeClassNotReadyError struct {
	Err error
}

// NewNodeClassNotReadyError wraps err as a NodeClassNotReadyError.
func NewNodeClassNotReadyError(err error) *NodeClassNotReadyError {
	return &NodeClassNotReadyError{Err: err}
}

func (e *NodeClassNotReadyError) Error() string {
	return "node class not ready: " + errString(e.Err)
}

func (e *NodeClassNotReadyError) Unwrap() error { return e.Err }

// IsNodeClassNotReadyError reports whether err is, or wraps, a
// NodeClassNotReadyError.
func IsNodeClassNotReadyError(err error) bool {
	var target *NodeClassNotReadyError
	return errors.As(err, &target)
}

// Stable reasons of a CreateError. They become the reason of the NodeClaim's
// Launched condition, so they are UpperCamelCase identifiers that never
// change once released.
const (
	// ReasonLaunchFailed is a launch failure without a more specific reason.
	ReasonLaunchFailed = "LaunchFailed"
	// ReasonUnauthorized is a launch refused by the cloud's access policy.
	ReasonUnauthorized = "Unauthorized"
	// ReasonNodeClassNotFound is a NodeClaim whose node class does not exist.
	ReasonNodeClassNotFound = "NodeClassNotFound"
	// ReasonNodeClassReadinessUnknown is a node class whose readiness has not
	// been determined yet.
	ReasonNodeClassReadinessUnknown = "NodeClassReadinessUnknown"
	// ReasonImageNotFound is a launch whose machine image does not exist.
	ReasonImageNotFound = "AMINotFound"
	// ReasonInstanceProfileNotFound is a launch whose instance profile does
	// not exist.
	ReasonInstanceProfileNotFound = "InstanceProfileNotFound"
	// ReasonSecurityGroupSubnetVPCMismatch is a launch whose security groups
	// and subnet are in different VPCs.
	ReasonSecurityGroupSubnetVPCMismatch = "SecurityGroupSubnetVPCMismatch"
	// ReasonSpotQuotaExceeded is a spot launch refused by the account's spot
	// quota.
	ReasonSpotQuotaExceeded = "SpotQuotaExceeded"
	// ReasonUserDataTooLarge is a launch whose user data exceeds the cloud's
	// size limit.
	ReasonUserDataTooLarge = "UserDataSizeLimitExceeded"
)

// CreateError is a launch failure other than missing capacity. Reason is a
// stable machine-readable code (one of the Reason constants or another
// UpperCamelCase identifier) and Message tells the user what happened and
// what to do.
type CreateError struct {
	Reason  string
	Message string
	Err     error
}

// NewCreateError returns a CreateError with the given reason and message,
// wrapping err (which may be nil).
func NewCreateError(err error, reason, message string) *CreateError {
	return &CreateError{Reason: reason, Message: message, Err: err}
}

func (e *CreateError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = errString(e.Err)
	} else if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return fmt.Sprintf("creating instance (%s): %s", e.Reason, msg)
}

func (e *CreateError) Unwrap() error { return e.Err }

// IsCreateError reports whether err is, or wraps, a CreateError.
func IsCreateError(err error) bool {
	var target *CreateError
	return errors.As(err, &target)
}

// AsCreateError returns the CreateError that err is or wraps.
func AsCreateError(err error) (*CreateError, bool) {
	var target *CreateError
	ok := errors.As(err, &target)
	return target, ok
}

// NodeClaimNotFoundError means that the instance behind a NodeClaim does not
// exist (any more).
type NodeClaimNotFoundError struct {
	Err error
}

// NewNodeClaimNotFoundError wraps err as a NodeClaimNotFoundError.
func NewNodeClaimNotFoundError(err error) *NodeClaimNotFoundError {
	return &NodeClaimNotFoundError{Err: err}
}

func (e *NodeClaimNotFoundError) Error() string {
	return "nodeclaim not found: " + errString(e.Err)
}

func (e *NodeClaimNotFoundError) Unwrap() error { return e.Err }

// IsNodeClaimNotFoundError reports whether err is, or wraps, a
// NodeClaimNotFoundError.
func IsNodeClaimNotFoundError(err error) bool {
	var target *NodeClaimNotFoundError
	return errors.As(err, &target)
}

// IgnoreNodeClaimNotFoundError returns nil for a NodeClaimNotFoundError and
// err otherwise.
func IgnoreNodeClaimNotFoundError(err error) error {
	if IsNodeClaimNotFoundError(err) {
		return nil
	}
	return err
}

func errString(err error) string {
	if err == nil {
		return "no detail"
	}
	return err.Error()
}
