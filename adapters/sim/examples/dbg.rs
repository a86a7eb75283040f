use steadfast_core::policy::Policy;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let sc = steadfast_sim::builtin::scenario(&args[1]).unwrap();
    let from: f64 = args[2].parse().unwrap();
    let to: f64 = args[3].parse().unwrap();
    let run = steadfast_sim::run(&sc, &Policy::default(), 1).unwrap();
    for r in &run.requests {
        let t = r.at.as_nanos() as f64 / 1e9;
        if t >= from && t <= to {
            println!("{:.3} call {} att {} {} {:?} ans {:.3} hint {:?}", t, r.call, r.attempt, r.target, r.reply, r.answered.as_nanos() as f64/1e9, r.hint);
        }
    }
}
#[allow(dead_code)]
fn unused() {}
