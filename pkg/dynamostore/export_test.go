package dynamostore

// WithSDKRetryer keeps the client's own retryer (the SDK's default: 3
// attempts, waits of up to 2 s and 4 s), for a measurement of the store
// as it was before its retries were sized to the call's timeout.
func WithSDKRetryer() Option {
	return func(c *config) { c.sdkRetryer = true }
}
