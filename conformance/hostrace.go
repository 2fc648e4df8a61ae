package conformance

import "time"

// timerRace (spec.Params.Reaction in checkBench) is how long a packet
// recorded as delivered to a real-time bench host may take to reach the
// host's protocol code while the host's timer holds it (a timer tick walks every RPC under the host's lock, sending
// RESENDs and NEED_ACKs as it goes): a tenth of the bench hosts' 10 ms
// tick, well below the one silent tick by which an early RESEND is early.
const timerRace = time.Millisecond
