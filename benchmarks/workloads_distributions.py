"""``distributions`` workload: the reparameterised ELBO terms of a VAE, Ember vs PyTorch.

A diagonal-Gaussian posterior is sampled with ``rsample``, scored under itself and under a
standard-normal prior, and its KL to the prior is backpropagated: a chain of small element-wise
ops, so the time is per-op overhead plus NumPy's element-wise kernels."""
import numpy as np

from workloads import workload


@workload("vae_gaussian_elbo", "Normal(256x64) rsample + log_prob + kl_divergence to N(0, 1) + "
          "backward, float32", number=50, quick_number=5, target=("torch", 3.0))
def vae_gaussian_elbo(lib):
    D = lib.distributions
    rng = np.random.default_rng(0)
    loc = lib.from_numpy(rng.standard_normal((256, 64), dtype=np.float32)).requires_grad_()
    log_scale = lib.from_numpy(rng.standard_normal((256, 64), dtype=np.float32) * 0.1)
    log_scale.requires_grad_()
    prior = D.Normal(lib.zeros(256, 64), lib.ones(256, 64))

    def step():
        loc.grad = log_scale.grad = None
        posterior = D.Normal(loc, log_scale.exp())
        z = posterior.rsample()
        loss = (posterior.log_prob(z) - prior.log_prob(z)).sum() \
            + D.kl_divergence(posterior, prior).sum()
        loss.backward()
        return loss
    return step
