// Package wire reads an AWS API request, as the controller's SDK put it on
// the wire, back into the call it was made from: the service, the operation
// and, for the operations package iampolicy models, the typed SDK input.
//
// The end-to-end tests run the controller against moto through a loopback
// proxy (package moto). Moto does not enforce IAM, so the proxy hands every
// request to Read and the test asks iampolicy.Account.Requests what AWS
// would authorize for it. Reading the request off the wire, rather than
// hooking the SDK, means the test sees exactly what the controller sent.
//
// Each service speaks one of four protocols, and Read follows the one the
// SDK in go.mod uses for it:
//
//   - EC2 query (EC2): a url-encoded form whose lists are flattened
//     (InstanceId.1=...) and whose keys are EC2's own member names, which are
//     not always the Go field names (see ec2Renames).
//   - AWS query (IAM, STS): a url-encoded form whose lists are wrapped in
//     "member" (Tags.member.1.Key=...) and whose keys are the Go field names.
//   - AWS JSON 1.0/1.1 (SQS, SSM, Pricing, EventBridge): the operation in
//     the X-Amz-Target header and a JSON body whose keys are the Go field
//     names.
//   - REST-JSON (EKS, ARC zonal shift): the operation and its input in the
//     method and path.
//
// Decoding is strict on purpose: a form key that names no field of the input
// is an error, so that a gap in the decoder fails the test instead of
// silently letting a request through the policy check with less data than
// the controller sent.
package wire
