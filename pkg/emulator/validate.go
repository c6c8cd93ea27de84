package emulator

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"

	"github.com/oxypipe/oxypipe/internal/jsonscan"
)

// The API's messages, as observed live (the batch size one is unconfirmed).
const (
	msgBadJSON          = "Json error: Unexpected value."
	msgUnsupportedSrc   = "Unsupported source."
	msgURLEmpty         = "Parameter `url` is empty."
	msgURLInvalid       = "Parameter `url` is invalid."
	msgIPHost           = "The hostname cannot be an ip address."
	msgBadTLD           = "Parameter `url` has invalid top level domain format."
	msgQueryEmpty       = "Query parameter is empty."
	msgOneArray         = "Batch request must contain one array of `query` or `url`."
	msgNotBatchable     = "Source `%s` is not available with a batch request."
	msgURLNotForSource  = "Source `%s` is not available with url parameter."
	msgMerchant         = "Either `query` or `context:merchant_id` parameters must be set."
	msgASINLength       = "ASIN length is not valid."
	msgASINChars        = "ASIN should only contain alphanumeric values."
	msgBatchTooLarge    = "Batch request cannot contain more than %d queries."
	msgPagesPositive    = "Parameter `pages` should be a positive integer."
	msgPagesMax         = "Parameter `pages` should not exceed 20."
	msgStartPageType    = "Invalid type for parameter `start_page`, supported types: `integer, string`."
	msgStartPagePos     = "Parameter `start_page` should be a positive integer."
	msgCallbackInvalid  = "Parameter `callback_url` is invalid."
	msgStorageUserinfo  = "Parameter `storage_url` must contain a valid user info."
	msgTooManyTotal     = "Too many requests. (Total Dynamic)."
	msgTooManyRender    = "Too many requests. (Total Render Dynamic)."
	msgNoAuth           = "Authorization header not provided."
	msgBadAuth          = "Invalid authorization header"
	msgQueryNotFound    = "Query not found."
	msgResourceNotFound = "Resource not found"
	msgThrottle         = "Access to %s has been limited to 1 req/s due to a low success rate. Please try again later."
)

const maxPages = 20

// decodeObject splits a request body that must be a JSON object into its
// top-level keys and raw values. It checks the syntax with json.Valid and
// then only slices: the values alias body, so callers copy what they keep
// (every spec, string and template built from them is a copy). Later
// duplicates win, as with encoding/json.
func decodeObject(body []byte) (map[string]json.RawMessage, bool) {
	if !json.Valid(body) {
		return nil, false
	}
	fields := make(map[string]json.RawMessage, 8)
	isObject := jsonscan.Object(body, func(name, value []byte) {
		fields[string(name)] = value
	})
	return fields, isObject
}

// inputOf returns the input value of fields for key. Strings are taken as
// they are; other JSON values as their text (strict sources then complain).
func inputOf(fields map[string]json.RawMessage, key string) (value string, present, isString bool) {
	raw, ok := fields[key]
	if !ok {
		return "", false, false
	}
	if s, ok := jsonscan.String(raw); ok {
		return s, true, true
	}
	if isNull(raw) {
		return "", true, false
	}
	return string(raw), true, false
}

// check applies the API's free checks to one submitted value: the message of
// the 400 it gets, or nil.
func check(src *sourceInfo, fields map[string]json.RawMessage, input string, present, isString bool) *Rejection {
	if src.strict {
		return checkStrict(src, fields, input, present)
	}
	if r := checkPages(fields); r != nil {
		return r
	}
	if r := checkInput(src, fields, input, present, isString); r != nil {
		return r
	}
	return checkDelivery(fields)
}

func reject(msg string) *Rejection { return &Rejection{Status: 400, Message: msg} }

func checkPages(fields map[string]json.RawMessage) *Rejection {
	if raw, ok := fields["pages"]; ok && !isNull(raw) {
		n, ok := rawInt(raw, false)
		if !ok || n < 1 {
			return reject(msgPagesPositive)
		}
		if n > maxPages {
			return reject(msgPagesMax)
		}
	}
	if raw, ok := fields["start_page"]; ok && !isNull(raw) {
		n, ok := rawInt(raw, true)
		if !ok {
			return reject(msgStartPageType)
		}
		if n < 1 {
			return reject(msgStartPagePos)
		}
	}
	return nil
}

func checkInput(src *sourceInfo, fields map[string]json.RawMessage, input string, present, isString bool) *Rejection {
	if src.urlSource {
		if !present || input == "" {
			return reject(msgURLEmpty)
		}
		if !isString {
			return reject(msgURLInvalid)
		}
		if msg := checkURL(input, true); msg != "" {
			return reject(msg)
		}
		return nil
	}
	if _, ok := fields["url"]; ok {
		return reject(fmt.Sprintf(msgURLNotForSource, src.name))
	}
	switch {
	case src.name == "amazon_bestsellers":
		return nil // it bills a page even for an empty query, as observed live
	case src.name == "amazon_search":
		if (isString && input != "") || merchantID(fields) {
			return nil
		}
		return reject(msgMerchant)
	case !isString || input == "":
		return reject(msgQueryEmpty)
	case src.name == "amazon_product" || src.name == "amazon_pricing":
		return checkASIN(input)
	}
	return nil
}

// checkASIN applies the API's ASIN checks: the length and the characters an
// ASIN may have, each refused with the API's own message.
func checkASIN(asin string) *Rejection {
	if len(asin) < 10 {
		return reject(msgASINLength)
	}
	for i := 0; i < len(asin); i++ {
		c := asin[i]
		if (c < '0' || c > '9') && (c < 'A' || c > 'Z') {
			return reject(msgASINChars)
		}
	}
	return nil
}

func merchantID(fields map[string]json.RawMessage) bool {
	var items []struct {
		Key   string          `json:"key"`
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(fields["context"], &items); err != nil {
		return false
	}
	for _, it := range items {
		if it.Key == "merchant_id" && !isNull(it.Value) && string(it.Value) != `""` {
			return true
		}
	}
	return false
}

// checkURL returns the message for a URL the API refuses, or "".
func checkURL(raw string, hosts bool) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return msgURLInvalid
	}
	if !hosts {
		return ""
	}
	host := u.Hostname()
	if net.ParseIP(host) != nil {
		return msgIPHost
	}
	switch host[strings.LastIndexByte(host, '.')+1:] {
	case "invalid", "test", "example":
		return msgBadTLD
	}
	return ""
}

// checkDelivery checks callback_url and storage_url.
func checkDelivery(fields map[string]json.RawMessage) *Rejection {
	if raw, ok := fields["callback_url"]; ok && !isNull(raw) {
		s, ok := jsonscan.String(raw)
		if !ok || checkURL(s, false) != "" {
			return reject(msgCallbackInvalid)
		}
	}
	kind, _ := jsonscan.String(fields["storage_type"])
	if kind == "s3_compatible" || kind == "tos" {
		s, _ := jsonscan.String(fields["storage_url"])
		u, err := url.Parse(s)
		if err != nil || u.User == nil {
			return reject(msgStorageUserinfo)
		}
		if _, ok := u.User.Password(); !ok {
			return reject(msgStorageUserinfo)
		}
	}
	return nil
}

// checkStrict applies the checks of a strict (short-object) source, which
// answer with a sorted `errors` list.
func checkStrict(src *sourceInfo, fields map[string]json.RawMessage, input string, present bool) *Rejection {
	if raw, ok := fields["url"]; ok && src.inputKey == "url" {
		s, isString := jsonscan.String(raw)
		if !isString || checkURL(s, false) != "" {
			return reject(msgURLInvalid)
		}
	}
	shared := sharedKeys()
	var errs []string
	for key := range fields {
		if key == "source" || key == src.inputKey || shared[key] || src.takes[key] {
			continue
		}
		errs = append(errs, fmt.Sprintf("[%s]: This field was not expected.", key))
	}
	switch {
	case !present && src.name != "walmart_search":
		errs = append(errs, fmt.Sprintf("[%s]: This field is missing.", src.inputKey))
	case present && input == "" && src.name != "walmart_search":
		errs = append(errs, fmt.Sprintf("[%s]: This value should not be blank.", src.inputKey))
	}
	if src.name == "mercadolibre_product" {
		if _, ok := fields["domain"]; !ok {
			errs = append(errs, "[domain]: This field is missing.")
		}
	}
	if raw, ok := fields["start_page"]; ok && src.takes["start_page"] {
		if _, ok := rawInt(raw, false); !ok {
			errs = append(errs, "[start_page]: This value should be of type int.")
		}
	}
	if len(errs) == 0 {
		return nil
	}
	sort.Strings(errs)
	return &Rejection{Status: 400, Errors: errs}
}
