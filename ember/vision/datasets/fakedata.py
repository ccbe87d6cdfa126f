"""``FakeData``: random images for smoke tests, the same image for the same index."""
import ember

from .vision import VisionDataset


class FakeData(VisionDataset):
    """``size`` random PIL images of ``image_size`` (C, H, W) with random targets in
    ``[0, num_classes)``. Sample ``i`` is drawn from a generator seeded with
    ``i + random_offset``, so it is the same on every access, without touching the global
    RNG (the calls are torchvision's; Ember's generator yields other values than torch's)."""

    def __init__(self, size=1000, image_size=(3, 224, 224), num_classes=10, transform=None,
                 target_transform=None, random_offset=0):
        super().__init__(None, transform=transform, target_transform=target_transform)
        self.size = size
        self.num_classes = num_classes
        self.image_size = image_size
        self.random_offset = random_offset

    def __getitem__(self, index):
        if index >= len(self):
            raise IndexError(f"{self.__class__.__name__} index out of range")
        rng_state = ember.get_rng_state()
        ember.manual_seed(index + self.random_offset)
        img = ember.randn(*self.image_size)
        target = ember.randint(0, self.num_classes, size=(1,), dtype=ember.long)[0]
        ember.set_rng_state(rng_state)
        from ..transforms import functional as F
        img = F.to_pil_image(img)
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target.item()

    def __len__(self):
        return self.size
