package userdata

import (
	"fmt"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
)

// MaxBytes is EC2's limit on user data, counted before base64 encoding
// (awsv1.MaxUserDataBytes). Generate refuses to produce more.
const MaxBytes = awsv1.MaxUserDataBytes

// SizeError is user data that EC2 would refuse for its size: what Generate
// produced for the family from spec.userData is over MaxBytes.
type SizeError struct {
	Family awsv1.AMIFamily
	// Size is the length in bytes of the user data Generate produced, before
	// base64 encoding.
	Size int
	// UserSize is the length in bytes of the node class's spec.userData.
	UserSize int
}

// Message says what is wrong, starting with the field: "spec.userData is
// ...".
func (e *SizeError) Message() string { return "spec.userData " + e.Detail() }

// Detail is Message without the field's name: "is ... bytes, ...".
func (e *SizeError) Detail() string {
	if !e.Merged() {
		return fmt.Sprintf("is %d bytes, over EC2's limit of %d bytes of user data (16 KB, counted before base64 encoding)",
			e.UserSize, MaxBytes)
	}
	return fmt.Sprintf("is %d bytes, and %d bytes once merged with the %s bootstrap configuration stevedore adds (%s), over EC2's limit of %d bytes of user data (16 KB, counted before base64 encoding)",
		e.UserSize, e.Size, e.Family, merge(e.Family), MaxBytes)
}

// Merged reports whether it is the merge that takes the user data over the
// limit: spec.userData alone is within it.
func (e *SizeError) Merged() bool {
	return e.Family != awsv1.AMIFamilyCustom && e.UserSize <= MaxBytes
}

// Fix says what to do.
func (e *SizeError) Fix() string { return awsv1.UserDataTooLargeFix }

func (e *SizeError) Error() string { return e.Message() + "; " + e.Fix() }

// merge names how a family's user data is put together.
func merge(family awsv1.AMIFamily) string {
	switch family {
	case awsv1.AMIFamilyAL2023:
		return "a MIME multi-part document ending in a nodeadm NodeConfig"
	case awsv1.AMIFamilyAL2:
		return "a MIME multi-part document ending in a bootstrap.sh call"
	case awsv1.AMIFamilyBottlerocket:
		return "the TOML settings rewritten with stevedore's settings.kubernetes keys"
	}
	return "a PowerShell block ending in the EKS bootstrap script"
}

// checkSize returns out, or a *SizeError when it is over MaxBytes.
func checkSize(family awsv1.AMIFamily, opts Options, out string) (string, error) {
	if len(out) <= MaxBytes {
		return out, nil
	}
	e := &SizeError{Family: family, Size: len(out)}
	if opts.UserData != nil {
		e.UserSize = len(*opts.UserData)
	}
	return "", e
}
