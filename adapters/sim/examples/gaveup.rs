use steadfast_core::policy::Policy;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let sc = steadfast_sim::builtin::scenario(&args[1]).unwrap();
    let run = steadfast_sim::run(&sc, &Policy::default(), 1).unwrap();
    let mut shown = 0;
    for (i, c) in run.calls.iter().enumerate() {
        if c.finish.is_success() { continue; }
        shown += 1; if shown > 5 { break; }
        println!("call {i} arrived {} started {} finished {} {:?}", c.arrived, c.started, c.finished, c.finish);
        for r in run.requests.iter().filter(|r| r.call as usize == i) {
            println!("   {} att {} {} {:?} ans {}", r.at, r.attempt, r.target, r.reply, r.answered);
        }
    }
    for (e, b) in &run.breaker { println!("{e} {:?}", b); }
}
