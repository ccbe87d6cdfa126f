"""A small DCGAN, in the shape of pytorch/examples ``dcgan/main.py`` (16x16 images).

The "real" images are smooth random stripes drawn with NumPy from ``--seed``.
Deterministic: the latent vectors (for the training steps and the fixed evaluation batch)
come from a seeded NumPy generator instead of ``torch.randn``; the DataLoader does not shuffle;
``--load-init`` replaces both networks' initial weights (``weights_init`` draws them from
torch's generator, as in the example).
"""
import argparse
import json
import os

import numpy as np
import torch
import torch.backends.cudnn as cudnn
import torch.nn as nn
import torch.optim as optim
import torch.utils.data

NZ, NGF, NDF, NC = 8, 8, 8, 1


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        torch.nn.init.normal_(m.weight, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        torch.nn.init.normal_(m.weight, 1.0, 0.02)
        torch.nn.init.zeros_(m.bias)


class Generator(nn.Module):
    def __init__(self, ngpu):
        super().__init__()
        self.ngpu = ngpu
        self.main = nn.Sequential(
            nn.ConvTranspose2d(NZ, NGF * 2, 4, 1, 0, bias=False),       # 4x4
            nn.BatchNorm2d(NGF * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(NGF * 2, NGF, 4, 2, 1, bias=False),      # 8x8
            nn.BatchNorm2d(NGF),
            nn.ReLU(True),
            nn.ConvTranspose2d(NGF, NC, 4, 2, 1, bias=False),           # 16x16
            nn.Tanh(),
        )

    def forward(self, input):
        if input.is_cuda and self.ngpu > 1:
            return nn.parallel.data_parallel(self.main, input, range(self.ngpu))
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self, ngpu):
        super().__init__()
        self.ngpu = ngpu
        self.main = nn.Sequential(
            nn.Conv2d(NC, NDF, 4, 2, 1, bias=False),                    # 8x8
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(NDF, NDF * 2, 4, 2, 1, bias=False),               # 4x4
            nn.BatchNorm2d(NDF * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(NDF * 2, 1, 4, 1, 0, bias=False),                 # 1x1
            nn.Sigmoid(),
        )

    def forward(self, input):
        if input.is_cuda and self.ngpu > 1:
            output = nn.parallel.data_parallel(self.main, input, range(self.ngpu))
        else:
            output = self.main(input)
        return output.view(-1, 1).squeeze(1)


def make_images(rng, count):
    xx = np.arange(16)[None, None, :]
    freq = rng.uniform(0.3, 0.8, (count, 1, 1))
    phase = rng.uniform(0, 2 * np.pi, (count, 1, 1))
    images = np.sin(freq * xx + phase) * np.ones((1, 16, 1))
    return torch.from_numpy(images[:, None].astype(np.float32))


def main():
    parser = argparse.ArgumentParser(description="DCGAN example")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--niter", type=int, default=2, help="number of epochs")
    parser.add_argument("--lr", type=float, default=0.0002)
    parser.add_argument("--beta1", type=float, default=0.5)
    parser.add_argument("--ngpu", type=int, default=1, help="number of GPUs to use")
    parser.add_argument("--netG", default="", help="path to netG (to continue training)")
    parser.add_argument("--netD", default="", help="path to netD (to continue training)")
    parser.add_argument("--outf", default="out", help="folder to output model checkpoints")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-accel", action="store_true")
    parser.add_argument("--save-init", metavar="PATH")
    parser.add_argument("--load-init", metavar="PATH")
    parser.add_argument("--save-model", metavar="PATH")
    parser.add_argument("--log", metavar="PATH")
    opt = parser.parse_args()

    use_accel = not opt.no_accel and torch.accelerator.is_available()
    device = torch.accelerator.current_accelerator() if use_accel else torch.device("cpu")
    os.makedirs(opt.outf, exist_ok=True)
    torch.manual_seed(opt.seed)
    cudnn.benchmark = True
    rng = np.random.default_rng(opt.seed)
    dataset = torch.utils.data.TensorDataset(make_images(rng, 64))
    dataloader = torch.utils.data.DataLoader(dataset, batch_size=opt.batch_size)
    latent = np.random.default_rng(opt.seed + 1)

    netG = Generator(opt.ngpu).to(device)
    netG.apply(weights_init)
    if opt.netG != "":
        netG.load_state_dict(torch.load(opt.netG))
    netD = Discriminator(opt.ngpu).to(device)
    netD.apply(weights_init)
    if opt.netD != "":
        netD.load_state_dict(torch.load(opt.netD))
    if opt.save_init:
        torch.save({"netG": netG.state_dict(), "netD": netD.state_dict()}, opt.save_init)
    if opt.load_init:
        checkpoint = torch.load(opt.load_init, weights_only=True)
        netG.load_state_dict(checkpoint["netG"])
        netD.load_state_dict(checkpoint["netD"])

    criterion = nn.BCELoss()
    fixed_noise = torch.from_numpy(latent.standard_normal((16, NZ, 1, 1)).astype(np.float32))
    fixed_noise = fixed_noise.to(device)
    real_label, fake_label = 1.0, 0.0
    optimizerD = optim.Adam(netD.parameters(), lr=opt.lr, betas=(opt.beta1, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=opt.lr, betas=(opt.beta1, 0.999))

    losses = []
    for epoch in range(opt.niter):
        for i, (real_cpu,) in enumerate(dataloader):
            # (1) Update D: maximize log(D(x)) + log(1 - D(G(z)))
            netD.zero_grad()
            real = real_cpu.to(device)
            batch_size = real.size(0)
            label = torch.full((batch_size,), real_label, dtype=real.dtype, device=device)
            output = netD(real)
            errD_real = criterion(output, label)
            errD_real.backward()
            D_x = output.mean().item()

            noise = latent.standard_normal((batch_size, NZ, 1, 1)).astype(np.float32)
            noise = torch.from_numpy(noise).to(device)
            fake = netG(noise)
            label.fill_(fake_label)
            output = netD(fake.detach())
            errD_fake = criterion(output, label)
            errD_fake.backward()
            errD = errD_real + errD_fake
            optimizerD.step()

            # (2) Update G: maximize log(D(G(z)))
            netG.zero_grad()
            label.fill_(real_label)
            output = netD(fake)
            errG = criterion(output, label)
            errG.backward()
            optimizerG.step()
            losses.extend([errD.item(), errG.item()])
            print(f"[{epoch}/{opt.niter}][{i}/{len(dataloader)}] Loss_D: {errD.item():.4f} "
                  f"Loss_G: {errG.item():.4f} D(x): {D_x:.4f}")
        # do checkpointing
        torch.save(netG.state_dict(), "%s/netG_epoch_%d.pth" % (opt.outf, epoch))
        torch.save(netD.state_dict(), "%s/netD_epoch_%d.pth" % (opt.outf, epoch))

    netG.eval()
    netD.eval()
    with torch.no_grad():
        fake = netG(fixed_noise)
        d_fake = netD(fake).mean().item()
        fake_std = fake.std().item()

    if opt.save_model:
        torch.save({"netG": netG.state_dict(), "netD": netD.state_dict()}, opt.save_model)
    if opt.log:
        with open(opt.log, "w") as f:
            json.dump({"losses": losses,
                       "metrics": {"d_of_fixed_fakes": d_fake, "fake_std": fake_std}}, f)


if __name__ == "__main__":
    main()
