package oxytype

// Marked returns info with the may-have-billed mark: the structured field,
// which is what recovery tools read, and MayHaveBilledText at the end of the
// message for a human reader. A marked info is returned as it is; info is
// never changed.
func Marked(info *ErrorInfo) *ErrorInfo {
	if info == nil {
		info = &ErrorInfo{}
	}
	if info.MayHaveBilled {
		return info
	}
	m := *info
	m.MayHaveBilled = true
	if m.Message == "" {
		m.Message = MayHaveBilledText
	} else {
		m.Message += "; " + MayHaveBilledText
	}
	return &m
}
