// A program outside the linalgd tree, built against an installed linalgd
// (find_package or pkg-config): one 2x2 product on the server at argv[1].
#include <iostream>
#include <vector>

#include "linalgd/client.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: consumer TARGET\n";
    return 2;
  }
  linalgd::client::ClientOptions options;
  options.target = argv[1];
  auto client = linalgd::Client::Create(options);
  if (!client.ok()) {
    std::cerr << client.status() << "\n";
    return 1;
  }
  linalgd::client::MatmulArgs args;
  args.a = linalgd::client::Tensor::FromVector<double>({2, 2}, {1, 2, 3, 4}).value();
  args.b = linalgd::client::Tensor::FromVector<double>({2, 2}, {5, 6, 7, 8}).value();
  auto r = (*client)->Matmul(std::move(args));
  if (!r.ok()) {
    std::cerr << r.status() << "\n";
    return 1;
  }
  const std::vector<double> want = {19, 22, 43, 50};
  if (r->out.ToVector<double>() != want) {
    std::cerr << "wrong product " << r->out.DebugString() << "\n";
    return 1;
  }
  std::cout << "consumer: matmul ok on " << r->info.backend << "\n";
  return 0;
}
