// Package amifamily decides which machine images an EC2NodeClass launches:
// it expands an alias such as al2023@latest into the SSM parameters of the
// EKS-optimized images and the instance requirements each image suits,
// builds the DescribeImages queries for id, name, owner, tag and
// ssmParameter selector terms, chooses among the images found (one per
// requirement set: non-deprecated before deprecated, then newest, then by
// name) to produce status.amis, and maps an instance type to its image.
//
// The package makes no AWS calls: the caller resolves the SSM parameters and
// runs the DescribeImages queries, and passes the results back in.
package amifamily
