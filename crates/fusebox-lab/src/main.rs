//! `fusebox-lab`: the experiment runner (filled in by the lab issue).

fn main() {
    println!("fusebox-lab {}", env!("CARGO_PKG_VERSION"));
}
